//! `inbox-ops`: the operator's commands against a deployed inbox. Depends on the library and
//! the AWS SDK only, never on the dev stack.
pub mod audit;
pub mod ops;
pub mod template;
