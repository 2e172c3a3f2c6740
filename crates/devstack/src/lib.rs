pub mod bridge;
pub mod cloudformation;
pub mod demo;
pub mod faults;
pub mod moto;
pub mod provision;
pub mod senders;
pub mod testkit;
