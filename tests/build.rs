//! Marks the GUI tests ignored (`cfg(no_wxparaver)`) when they cannot run: no
//! `WXPARAVER` (Paraver's GUI, from `../shared/tools/wxparaver/build.sh`) and no
//! `CI` (under CI they run, and fail without it). So a run without the GUI says
//! in its summary that they did not run, and why, instead of passing silently.

fn main() {
    println!("cargo::rerun-if-env-changed=WXPARAVER");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rustc-check-cfg=cfg(no_wxparaver)");
    let set = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if !set("WXPARAVER") && !set("CI") {
        println!("cargo::rustc-cfg=no_wxparaver");
    }
}
