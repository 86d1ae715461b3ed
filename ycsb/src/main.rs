fn main() {
    std::process::exit(ycsb::cli::main());
}
