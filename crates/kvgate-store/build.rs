// `sqlx::migrate!` embeds the migrations at compile time: a new migration file must rebuild it.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
