//! The template as CloudFormation sees it, rehearsed locally: `template.yaml` translated by the
//! real SAM transform ([`translate`]), created with `samconfig.toml`'s parameters
//! ([`samconfig`]) as a stack on moto's CloudFormation and read back ([`deploy`]).
//!
//! Moto 5.2.5 creates the table, both queues (FIFO and redrive attributes), both functions with
//! their resolved environment and reserved concurrency, the roles with their inline policies, the
//! event source mapping, the log groups, the dashboard and the alarm topic with its e-mail
//! subscription. It skips, with a warning and still CREATE_COMPLETE, the HTTP API and its stage
//! (`AWS::ApiGatewayV2::*`) and the alarms (`AWS::CloudWatch::Alarm`); it ignores the table's
//! TTL (applied by [`deploy::apply_what_moto_ignores`]), the DLQ's `RedriveAllowPolicy`, managed
//! policy attachments, parameter constraints (`AllowedPattern`) and unknown parameter names
//! (checked by [`deploy::check_parameters_declared`]). What it skips or ignores is tested on the
//! translated template instead.

mod cache;
pub mod deploy;
pub mod samconfig;
pub mod streams;
pub mod translate;

pub use deploy::{
    delete_local, deploy_local, deploy_local_with, EventSourceMapping, Function, Stack,
};
pub use samconfig::{samconfig_path, Parameters};
pub use stack_config::template_path;
pub use translate::Translated;
