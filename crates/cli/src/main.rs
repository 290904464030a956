fn main() -> std::process::ExitCode {
    storbench::main_with_args(std::env::args_os())
}
