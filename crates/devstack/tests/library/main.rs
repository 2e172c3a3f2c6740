//! The library's tests that sign requests with the dev stack's senders or accept messages with
//! its test kit, on the library's in-memory twins (no moto). Here, not in `crates/inbox/tests/`,
//! so that the library has no dev-dependency on the dev stack (no cycle: the dev stack depends
//! on the library) and its own tests, the simulation's release build included, compile no dev
//! stack.

mod arbitrary_input;
mod backpressure;
mod payload_pointers;
