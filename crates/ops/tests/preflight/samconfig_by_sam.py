"""samconfig.toml written and read by the SAM CLI's own code (aws-sam-cli, .venv-sam), for
crates/ops/tests/preflight/guided.rs.

    python samconfig_by_sam.py write DIR PARAMETERS_JSON STACK REGION
        writes DIR/samconfig.toml as `sam deploy --guided` saves its answers: GuidedConfig's
        save_config, with the arguments guided_context.py passes it;
    python samconfig_by_sam.py read FILE
        prints, as JSON, the parameter values `sam deploy` takes from FILE: SamConfig's
        `default` environment for `deploy` (global merged in), through CfnParameterOverridesType.
"""

import json
import sys
from pathlib import Path

import click
from samcli.cli.types import CfnParameterOverridesType
from samcli.commands.deploy.guided_config import GuidedConfig
from samcli.lib.config.samconfig import SamConfig


def write(directory, parameters, stack, region):
    ctx = click.Context(click.Command("deploy"), info_name="deploy")
    ctx.samconfig_dir = directory
    with ctx:
        GuidedConfig(template_file=str(Path(directory) / "template.yaml"), section="parameters").save_config(
            # guided_context.py keeps each prompted parameter as {"Value": ..., "Hidden": ...}.
            {name: {"Value": value, "Hidden": False} for name, value in parameters.items()},
            "default",
            "samconfig.toml",
            stack_name=stack,
            resolve_s3=True,
            s3_prefix=stack,
            image_repositories=None,
            resolve_image_repos=False,
            region=region,
            profile=None,
            confirm_changeset=True,
            capabilities=("CAPABILITY_IAM",),
            signing_profiles=None,
            disable_rollback=False,
        )


def read(path):
    path = Path(path)
    config = SamConfig(config_dir=str(path.parent), filename=path.name)
    settings = config.get_all(["deploy"], "parameters")
    values = CfnParameterOverridesType().convert(settings.get("parameter_overrides"), None, None)
    print(json.dumps({"parameters": values, "stack_name": settings.get("stack_name"), "region": settings.get("region")}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        read(sys.argv[2])
