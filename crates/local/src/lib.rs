pub mod bridge;
pub mod faults;
pub mod moto;
pub mod provision;
pub mod testkit;
