// Command go-corpus runs holo-scaffold's Go template corpus through Go's own
// text/template and writes each case's output (or error) into the corpus, or
// with -check only reports the cases whose written output differs.
//
// Usage: go run main.go [-check] CORPUS DATA
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// A corpus case: a main template, the partials beside it, and what Go gives.
type corpusCase struct {
	name     string
	main     string
	partials [][2]string // path below the tree, text
	delims   string      // "LEFT RIGHT", or "" for Go's own
	result   string      // "--- output", "--- error NAME:LINE" or "--- output sprig"
	body     string      // the output, or Go's error message
}

const sep = "\n--- "

func parseCorpus(text string) (string, []corpusCase) {
	chunks := strings.Split(text, "\n### ")
	var cases []corpusCase
	for _, chunk := range chunks[1:] {
		name, rest, _ := strings.Cut(chunk, "\n")
		c := corpusCase{name: name}
		parts := strings.Split("\n"+rest, sep)
		c.main = strings.TrimPrefix(parts[0], "\n")
		for _, part := range parts[1:] {
			head, body, _ := strings.Cut(part, "\n")
			if strings.HasPrefix(head, "delims ") {
				c.delims = strings.TrimPrefix(head, "delims ")
			} else if strings.HasPrefix(head, "partial ") {
				c.partials = append(c.partials, [2]string{strings.TrimPrefix(head, "partial "), body})
			} else {
				c.result, c.body = head, body
			}
		}
		cases = append(cases, c)
	}
	return chunks[0], cases
}

func (c corpusCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %s\n%s", c.name, c.main)
	for _, p := range c.partials {
		fmt.Fprintf(&b, "%spartial %s\n%s", sep, p[0], p[1])
	}
	if c.delims != "" {
		fmt.Fprintf(&b, "%sdelims %s", sep, c.delims)
	}
	fmt.Fprintf(&b, "%s%s\n%s", sep, c.result, c.body)
	return b.String()
}

// ints turns JSON numbers without a fraction into int, as YAML decodes them.
func ints(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i)
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = ints(x)
		}
	case []any:
		for i, x := range t {
			t[i] = ints(x)
		}
	}
	return v
}

// lookup is holo-scaffold's `lookup "a.b" [default]` over the data.
func lookup(data map[string]any) func(string, ...any) (any, error) {
	return func(path string, def ...any) (any, error) {
		var at any = data
		for _, key := range strings.Split(path, ".") {
			m, ok := at.(map[string]any)
			if !ok {
				at = nil
				break
			}
			at = m[key]
		}
		if at == nil {
			if len(def) == 0 {
				return nil, fmt.Errorf("lookup %q: no such key; pass a default", path)
			}
			return def[0], nil
		}
		return at, nil
	}
}

// run renders one case as holo-scaffold does: the partials parsed first in
// path order (a later definition replaces an earlier one), then the main
// template, whose definitions replace the partials'.
func run(c corpusCase, data map[string]any) (string, error) {
	funcs := template.FuncMap{"lookup": lookup(data)}
	left, right, _ := strings.Cut(c.delims, " ")
	texts := map[string]string{}
	for _, p := range c.partials {
		texts[p[0]] = p[1]
	}
	funcs["render"] = func(name string, dot any) (string, error) {
		text, ok := texts[name]
		if !ok {
			return "", fmt.Errorf("render %q: no such partial", name)
		}
		t, err := template.New(name).Funcs(funcs).Delims(left, right).Parse(text)
		if err != nil {
			return "", err
		}
		var out strings.Builder
		err = t.Execute(&out, dot)
		return out.String(), err
	}
	root := template.New("").Funcs(funcs).Delims(left, right)
	sorted := append([][2]string{}, c.partials...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i][0] < sorted[j][0] })
	for _, p := range sorted {
		if _, err := root.New(p[0]).Parse(p[1]); err != nil {
			return "", err
		}
	}
	if _, err := root.New("main").Parse(c.main); err != nil {
		return "", err
	}
	var out strings.Builder
	err := root.ExecuteTemplate(&out, "main", data)
	return out.String(), err
}

var place = regexp.MustCompile(`template: ([^:]+):(\d+)`)

func main() {
	check := flag.Bool("check", false, "only report the cases that differ")
	flag.Parse()
	raw, err := os.ReadFile(flag.Arg(1))
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var data map[string]any
	if err := dec.Decode(&data); err != nil {
		panic(err)
	}
	ints(data)
	text, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		panic(err)
	}
	head, cases := parseCorpus(strings.TrimSuffix(string(text), "\n"))
	differ, fromDocs := 0, 0
	var b strings.Builder
	b.WriteString(head)
	for _, c := range cases {
		if c.result == "output sprig" {
			fromDocs++
			b.WriteString(c.String())
			continue
		}
		was := c.String()
		out, err := run(c, data)
		if err != nil {
			c.result, c.body = "error", err.Error()
			if m := place.FindStringSubmatch(err.Error()); m != nil {
				c.result = "error " + m[1] + ":" + m[2]
			}
		} else {
			c.result, c.body = "output", out
		}
		if c.String() != was {
			differ++
			if *check {
				fmt.Printf("%s: Go gives %q %q\n", c.name, c.result, c.body)
			}
		}
		b.WriteString(c.String())
	}
	fmt.Printf("%d cases (%d from sprig's documentation), %d differ from Go\n", len(cases), fromDocs, differ)
	if *check {
		if differ > 0 {
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(flag.Arg(0), []byte(b.String()+"\n"), 0o644); err != nil {
		panic(err)
	}
}
