//! Records the source revision the benchmark binary is built from (`ORRERY_BUILD_GIT_REV`),
//! so that results name the code that produced them even when the binary is run after the
//! checkout moved on (a copied binary, a long suite).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // Rebuild when HEAD, the branch it names, packed refs or the index (dirtiness) change.
    for path in ["HEAD", "packed-refs", "index"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(p) =
        git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r]))
    {
        println!("cargo:rerun-if-changed={p}");
    }
    let rev = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{rev}-dirty") } else { rev }
        }
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=ORRERY_BUILD_GIT_REV={rev}");
}
