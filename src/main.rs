fn main() -> std::process::ExitCode {
    let code = holo::cli::main(
        std::env::args_os()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect(),
    );
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(255))
}
