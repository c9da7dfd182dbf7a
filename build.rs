//! Lays out the operator's hot code first in release builds (`link/hot-code.ld`).
//!
//! Every process maps the pages of the code it runs, and the kernel maps a binary's pages
//! 64 KB at a time around each one touched: with the functions a replica runs scattered
//! over its 13.5 MB of code, all of it was resident in every replica. The linker script
//! puts the functions a profiled run executed (`hack/hot_code.py`) into one section
//! ahead of the rest, so that a replica maps about half its code. A function named in
//! the script but renamed since is simply not moved; one missing from it stays behind.

use std::env;
use std::path::Path;

const SCRIPT: &str = "link/hot-code.ld";

fn main() {
    println!("cargo:rerun-if-changed={SCRIPT}");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    // An ELF linker (lld, GNU ld) reads the script; others do not.
    let elf = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !(release && elf) {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let script = Path::new(&dir).join(SCRIPT);
    println!(
        "cargo:rustc-link-arg-bin=verda-operator=-Wl,-T,{}",
        script.display()
    );
}
