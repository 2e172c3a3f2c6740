//! Functions as real processes on this machine: [`emulator`], the Lambda Runtime API they
//! poll; [`supervisor`], their processes, restarted when they die (the chaos test kills
//! them); [`http`], the small HTTP server both the emulator and the bench's proxy use.

pub mod emulator;
pub mod http;
pub mod supervisor;

pub use emulator::{Emulator, Instance, Outcome};
pub use supervisor::{FunctionProcess, Supervisor};
