//! `inbox-ops`: the operator's commands against a deployed inbox, one module per command
//! ([`init`] and [`preflight`] before a deploy, with samconfig.toml read as the SAM CLI reads
//! it by the `stack-config` crate, [`audit`], [`why`], [`lookup`], [`redrive`], [`esm`] for pause and resume, [`status`],
//! [`smoke`], [`replay`], [`console`] in a browser, [`handshake`] to open a handshake's window,
//! [`secret`] to store a source's secret, [`receive`] a throwaway system of record, [`destroy`] the teardown),
//! how they find the stack's resources ([`stack`]),
//! their command line ([`cli`]), what they print of a message or the ledger ([`text`]: shown
//! escaped), the AWS clients
//! ([`aws`]); template.yaml is read by the `stack-config` crate (shared with the dev stack and
//! the bench). Depends on the library, `stack-config` and the AWS SDK only, never on the dev stack.
pub mod audit;
pub mod aws;
pub mod breakers;
pub mod cli;
pub mod console;
pub mod destination_pause;
pub mod destination_state;
pub mod destroy;
pub mod esm;
pub mod handshake;
pub mod init;
pub mod lookup;
pub mod preflight;
pub mod rate_status;
pub mod receive;
pub mod redrive;
pub mod replay;
pub mod secret;
pub mod smoke;
pub mod stack;
pub mod status;
pub mod text;
pub mod trace_link;
pub mod why;
