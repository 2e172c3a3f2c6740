//! `make demo`: the whole inbox on one machine, driven over HTTP like real senders drive it.
//!
//! moto plays AWS (table and queues made from template.yaml), `cargo lambda watch` runs both
//! functions behind the real Runtime API emulator, a loopback system of record counts the side
//! effects, and the bridge plays the SQS event source mapping by invoking the consumer through
//! the emulator. Then senders deliver: the sample webhooks, a retry storm, bad signatures and
//! malformed bodies; a few receiver crashes after enqueueing are replayed, and some completed
//! events are redelivered late straight onto the queue. The result table counts what each layer
//! stopped, and the run fails unless every accepted event had exactly one side effect.
//!
//! With `--console`, the demo then serves `inbox-ops console` on its stack (the figures of the
//! run included) until Ctrl-C. `demo serve` starts the same stack and the console and waits, for
//! `cargo lambda invoke --data-file events/…`;
//! `demo check-events` invokes every file in `events/` through the emulator and checks each
//! answer against [`events`]' expectations.

mod bridge_loop;
mod check;
mod console;
mod deliveries;
mod destinations;
pub mod env_file;
pub mod events;
mod report;
mod run;
mod sender;
mod serve;
mod stack;
pub mod watch;

pub use check::{check_events, compare, Checked};
pub use report::Report;
pub use run::{run, Options};
pub use serve::serve;
pub use stack::{build_functions, Stack, StackOptions};
