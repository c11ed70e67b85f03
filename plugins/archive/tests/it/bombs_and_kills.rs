//! holo-archive is safe to leave running: archive bombs (small compressed,
//! huge expanded, built here in tar.gz and zip) are refused before anything
//! is written, by the size and entry limits and by the free space of the
//! target's file system; and a run killed during an extraction leaves a
//! state that the next run finishes, even without `creates`.

use crate::support;

use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::{Format, Item, Root, Route, Server, build};

const ENTITY: &str = "archive:/opt/bomb.tar.gz";
const ZIP_ENTITY: &str = "archive:/opt/bomb.zip";

/// Compresses `input` as raw deflate with a full flush, which resets the
/// compressor: the same input then always gives the same bytes, so a
/// chunk's output can be repeated to stand for the chunk repeated.
fn deflate_full_flush(compress: &mut flate2::Compress, input: &[u8]) -> Vec<u8> {
    let mut output = Vec::with_capacity(input.len() / 100 + 1024);
    let before = compress.total_in();
    while compress.total_in() - before < input.len() as u64 || output.is_empty() {
        let done = usize::try_from(compress.total_in() - before).expect("fits");
        output.reserve(64 << 10);
        compress
            .compress_vec(&input[done..], &mut output, flate2::FlushCompress::Full)
            .expect("deflate");
    }
    output
}

/// One tar entry of `mib` MiB of zeros, gzipped: about 1 KiB per MiB. It
/// is assembled from one compressed MiB repeated (see
/// [`deflate_full_flush`]), so building a GiB bomb takes no time.
fn tar_gz_bomb(mib: u64) -> Vec<u8> {
    let size = mib << 20;
    let mut header = tar::Header::new_gnu();
    header.set_path("zeros").expect("path");
    header.set_size(size);
    header.set_mode(0o644);
    header.set_cksum();
    let zeros = vec![0_u8; 1 << 20];
    let end = [0_u8; 1024];
    let mut compress = flate2::Compress::new(flate2::Compression::best(), false);
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3];
    gz.extend(deflate_full_flush(&mut compress, header.as_bytes()));
    let mib_of_zeros = deflate_full_flush(&mut compress, &zeros);
    assert_eq!(
        deflate_full_flush(&mut compress, &zeros),
        mib_of_zeros,
        "a full flush makes the output repeatable"
    );
    for _ in 0..mib {
        gz.extend(&mib_of_zeros);
    }
    let mut tail = Vec::with_capacity(4096);
    compress
        .compress_vec(&end, &mut tail, flate2::FlushCompress::Finish)
        .expect("deflate");
    gz.extend(tail);
    let mut crc = crc32fast::Hasher::new();
    crc.update(header.as_bytes());
    let mut crc_of_mib = crc32fast::Hasher::new();
    crc_of_mib.update(&zeros);
    for _ in 0..mib {
        crc.combine(&crc_of_mib);
    }
    crc.update(&end);
    gz.extend(crc.finalize().to_le_bytes());
    let total = 512 + size + 1024;
    gz.extend(
        u32::try_from(total & 0xffff_ffff)
            .expect("masked")
            .to_le_bytes(),
    );
    gz
}

/// `files` files of `mib` MiB of zeros each in a zip: one entry compressed
/// once, its compressed data copied for the others.
fn zip_bomb(files: usize, mib: usize) -> Vec<u8> {
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(9));
    let mut one = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    one.start_file("zeros0", options).expect("zip entry");
    let chunk = vec![0_u8; 1 << 20];
    for _ in 0..mib {
        one.write_all(&chunk).expect("zip data");
    }
    let one = one.finish().expect("zip").into_inner();
    let mut source = zip::ZipArchive::new(std::io::Cursor::new(one)).expect("read zip");
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for index in 0..files {
        let entry = source.by_index(0).expect("entry");
        writer
            .raw_copy_file_rename(entry, format!("zeros{index}"))
            .expect("copy entry");
    }
    writer.finish().expect("zip").into_inner()
}

fn serve(server: &Server, name: &str, bytes: Vec<u8>) -> String {
    server.serve(
        &format!("/{name}"),
        Route {
            body: bytes,
            ..Route::default()
        },
    )
}

fn resource(name: &str, url: &str, extra: &str) -> String {
    format!(
        "[[archive]]\nname = \"/opt/{name}\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/srv\"\n{extra}"
    )
}

/// Nothing was extracted: `srv` is empty (no staging directory either).
fn assert_nothing_extracted(root: &Root) {
    let left: Vec<_> = fs::read_dir(root.path("srv"))
        .expect("srv")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "extracted or staged: {left:?}");
}

#[test]
fn a_tar_gz_bomb_is_refused_before_writing_by_the_size_limit() {
    let server = Server::start();
    let bomb = tar_gz_bomb(1024);
    assert!(bomb.len() < 2 << 20, "a bomb: {} bytes", bomb.len());
    let url = serve(&server, "bomb.tar.gz", bomb);
    let root = Root::new(&resource(
        "bomb.tar.gz",
        &url,
        "max_extract_size = \"100MiB\"\n",
    ));
    let run = root.op("apply", ENTITY);
    assert!(!run.success, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("expands to more than 104857600 bytes, the limit")
            && run.stderr.contains("max_extract_size")
            && run.stderr.contains("refused before extracting anything"),
        "{}",
        run.stderr
    );
    assert_nothing_extracted(&root);
}

#[test]
fn a_bomb_within_a_raised_limit_is_extracted() {
    let server = Server::start();
    let url = serve(&server, "bomb.tar.gz", tar_gz_bomb(8));
    let root = Root::new(&resource(
        "bomb.tar.gz",
        &url,
        "max_extract_size = \"8MiB\"\n",
    ));
    let run = root.op("apply", ENTITY);
    assert!(run.success, "{}", run.stderr);
    assert_eq!(
        fs::read(root.path("srv/zeros")).expect("extracted"),
        vec![0_u8; 8 << 20]
    );
}

#[test]
fn a_zip_bomb_is_refused_before_writing_by_the_size_and_entry_limits() {
    let server = Server::start();
    let bomb = zip_bomb(64, 16);
    assert!(bomb.len() < 2 << 20, "a bomb: {} bytes", bomb.len());
    let url = serve(&server, "bomb.zip", bomb);
    let root = Root::new(&resource(
        "bomb.zip",
        &url,
        "max_extract_size = \"100MiB\"\n",
    ));
    let run = root.op("apply", ZIP_ENTITY);
    assert!(!run.success);
    assert!(
        run.stderr.contains("the limit") && run.stderr.contains("max_extract_size"),
        "{}",
        run.stderr
    );
    assert_nothing_extracted(&root);
    root.set_resources(&resource("bomb.zip", &url, "max_extract_entries = 10\n"));
    let run = root.op("apply", ZIP_ENTITY);
    assert!(!run.success);
    assert!(
        run.stderr.contains("more than 10 entries")
            && run.stderr.contains("raise max_extract_entries"),
        "{}",
        run.stderr
    );
    assert_nothing_extracted(&root);
}

#[test]
fn the_default_limit_refuses_what_headers_say_is_huge() {
    // A tar header that claims a petabyte: refused from the header, before
    // any of the (absent) data is read or anything is written.
    let mut header = tar::Header::new_gnu();
    header.set_path("huge").expect("path");
    header.set_size(1 << 50);
    header.set_mode(0o644);
    header.set_cksum();
    let mut bytes = Vec::new();
    {
        let mut encoder = flate2::write::GzEncoder::new(&mut bytes, flate2::Compression::default());
        encoder.write_all(header.as_bytes()).expect("gzip");
        encoder.finish().expect("gzip");
    }
    let server = Server::start();
    let url = serve(&server, "bomb.tar.gz", bytes);
    let root = Root::new(&resource("bomb.tar.gz", &url, ""));
    let run = root.op("apply", ENTITY);
    assert!(!run.success);
    assert!(
        run.stderr
            .contains(&format!("more than {} bytes, the limit", 64_u64 << 30)),
        "{}",
        run.stderr
    );
    assert_nothing_extracted(&root);
    // With the limit raised past it, the free space refuses it.
    root.set_resources(&resource(
        "bomb.tar.gz",
        &url,
        "max_extract_size = \"2048TiB\"\n",
    ));
    let run = root.op("apply", ENTITY);
    assert!(!run.success);
    assert!(
        run.stderr.contains("the file system of /srv has")
            && run.stderr.contains("free some space"),
        "{}",
        run.stderr
    );
    assert_nothing_extracted(&root);
}

#[test]
fn a_normal_archive_is_extracted_under_the_default_limits() {
    let server = Server::start();
    let bytes = build(
        Format::Zip,
        &[Item::Dir("app/"), Item::File("app/a", b"a\n", 0o644)],
    );
    let url = serve(&server, "app.zip", bytes);
    let root = Root::new(&resource("app.zip", &url, ""));
    let run = root.op("apply", "archive:/opt/app.zip");
    assert!(run.success, "{}", run.stderr);
    assert_eq!(
        fs::read_to_string(root.path("srv/app/a")).expect("a"),
        "a\n"
    );
}

#[test]
fn a_run_killed_during_extraction_without_creates_extracts_on_the_next_run() {
    let server = Server::start();
    let names: Vec<String> = (0..3000)
        .map(|index| format!("app/d{}/f{index}", index / 100))
        .collect();
    let content = vec![b'x'; 2048];
    let items: Vec<Item> = names
        .iter()
        .map(|name| Item::File(name, &content, 0o644))
        .collect();
    let url = serve(&server, "app.tar.gz", build(Format::TarGz, &items));
    let root = Root::new(&resource("app.tar.gz", &url, ""));
    let entity = "archive:/opt/app.tar.gz";
    assert!(root.run(&["scan"]).success);
    let mut child = root
        .command(&["apply", entity])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start apply");
    let staging_seen = |root: &Root| {
        fs::read_dir(root.path("srv")).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".holo-archive-")
            })
        })
    };
    let started = Instant::now();
    while !staging_seen(&root) {
        assert!(
            child.try_wait().expect("poll").is_none(),
            "the extraction finished before it could be killed"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "no extraction");
        std::thread::sleep(Duration::from_millis(1));
    }
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).expect("kill");
    child.wait().expect("reap");
    assert!(root.path("opt/app.tar.gz").is_file(), "downloaded");

    let recovery = root.op("apply", entity);
    assert!(recovery.success, "{}", recovery.stderr);
    assert!(
        recovery.stdout.contains("Extracted 3000 entries"),
        "{}",
        recovery.stdout
    );
    for name in &names {
        assert!(root.path(&format!("srv/{name}")).is_file(), "{name}");
    }
    assert!(!staging_seen(&root), "the stale staging directory is gone");
    assert_eq!(root.op("apply", entity).fd3, "not changed\n");
}
