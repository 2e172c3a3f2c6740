//! Shared defaults: constants the start-up configuration and the parts it configures both
//! name. A leaf module, so that the configuration need not import the consumer.

/// Real failures of a key, and receives of an unreadable message, before the consumer
/// dead-letters it (`MAX_FAILURES`).
pub const DEFAULT_MAX_FAILURES: u32 = 5;
