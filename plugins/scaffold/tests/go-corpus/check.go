// Runs corpus.txt through Go's own text/template with data.json as dot and
// prints each case whose output differs from the one written down.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/template"
)

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

func main() {
	raw, _ := os.ReadFile(os.Args[2])
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var data any
	if err := dec.Decode(&data); err != nil {
		panic(err)
	}
	data = ints(data)
	corpus, _ := os.ReadFile(os.Args[1])
	failed := 0
	cases := strings.Split(string(corpus), "\n### ")[1:]
	for _, c := range cases {
		name, rest, _ := strings.Cut(c, "\n")
		tmpl, want, _ := strings.Cut(rest, "\n---\n")
		want = strings.TrimSuffix(want, "\n")
		var out strings.Builder
		t, err := template.New(name).Parse(tmpl)
		if err == nil {
			err = t.Execute(&out, data)
		}
		if err != nil || out.String() != want {
			failed++
			fmt.Printf("%s: Go gives %q (error %v), the corpus says %q\n", name, out.String(), err, want)
		}
	}
	fmt.Printf("%d cases, %d differ from Go\n", len(cases), failed)
	if failed > 0 {
		os.Exit(1)
	}
}
