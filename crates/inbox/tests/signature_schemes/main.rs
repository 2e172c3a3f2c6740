//! Signature schemes: published vectors, each scheme's accept/reject behaviour, properties,
//! and cross-checks against what the real sender libraries produce (`tests/python/sign.py`).
//!
//! One module per topic: `fixtures` and `signer` are shared; `vectors`, `behaviour`,
//! `timestamps`, `malformed`, `construction`, `properties` and `python` hold the tests.

mod behaviour;
mod construction;
mod fixtures;
mod malformed;
mod properties;
mod python;
mod signer;
mod timestamps;
mod vectors;
