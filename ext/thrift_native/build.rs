// Exposes the Ruby version being built against as cfg flags (e.g. `ruby_eq_3_1`), so that layout-dependent fast paths
// compile only for the Ruby whose object layout they know; `ivar_layout` names that layout (src/ruby/ivars.rs) and
// `ivar_slots` is set when there is one.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = rb_sys_env::activate()?;
    println!("cargo::rustc-check-cfg=cfg(ivar_slots)");
    println!("cargo::rustc-check-cfg=cfg(ivar_layout, values(\"class_index\", \"shapes\", \"shape_fields\"))");
    // THRIFT_NATIVE_IVARS=rb_ivar_get builds without the slots (bench/read_workload.rb compares the two).
    println!("cargo::rerun-if-env-changed=THRIFT_NATIVE_IVARS");
    let generic = std::env::var("THRIFT_NATIVE_IVARS").is_ok_and(|v| v == "rb_ivar_get");
    let layout = match env.ruby_major_minor() {
        _ if generic => None,
        (3, 1) => Some("class_index"),
        (3, 2..=4) => Some("shapes"),
        (4, 0) => Some("shape_fields"),
        _ => None,
    };
    if let Some(layout) = layout {
        println!("cargo::rustc-cfg=ivar_slots");
        println!("cargo::rustc-cfg=ivar_layout=\"{layout}\"");
    }
    Ok(())
}
