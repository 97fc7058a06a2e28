// Exposes the Ruby version being built against as cfg flags (e.g. `ruby_eq_3_1`), so that layout-dependent fast
// paths compile only for the Ruby whose object layout they know.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = rb_sys_env::activate()?;
    Ok(())
}
