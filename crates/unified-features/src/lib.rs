//! No code: this package only takes part in feature resolution (see its `Cargo.toml`). Every
//! build started at the workspace root without `-p` (`cargo run --bin demo`, `cargo lambda
//! watch`'s `cargo run --bin receiver`, `cargo test --workspace`) selects it, so the features
//! its manifest turns on are on in all of them alike.
