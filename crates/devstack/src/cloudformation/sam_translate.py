# template.yaml as CloudFormation receives it from `sam deploy`: the real SAM transform
# (aws-sam-translator, pinned in requirements-dev.txt) over the template, after pointing every
# function's CodeUri at CODE_URI as `sam package` would (CodeUri "." is a local build path the
# transform refuses). Prints the translated template as JSON.
#
#   python sam_translate.py TEMPLATE CODE_URI < parameter-values.json
#
# No AWS call: the transform resolves managed policy names from the map bundled with it, and
# this template names none outside it (the loader below refuses to ask IAM).
import json
import os
import sys

import yaml
from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
from samtranslator.translator.transform import transform

# The transform asks for the region (pseudo parameters) when it has no session.
os.environ.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_REGION", "us-east-1"))


class CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !GetAtt, !Sub, ...) as their long forms."""


def _intrinsic(loader, suffix, node):
    name = "Ref" if suffix == "Ref" else "Fn::" + suffix
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


class OfflinePolicyLoader(ManagedPolicyLoader):
    """Asked only for a managed policy name missing from the transform's bundled map."""

    def __init__(self):
        pass

    def load(self):
        raise SystemExit(
            "the template names a managed policy the SAM transform does not bundle; "
            "use its ARN instead of its name"
        )


def main():
    template_path, code_uri = sys.argv[1], sys.argv[2]
    parameter_values = json.load(sys.stdin)
    with open(template_path, encoding="utf-8") as f:
        template = yaml.load(f, Loader=CloudFormationLoader)
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = code_uri
    translated = transform(template, parameter_values, OfflinePolicyLoader())
    json.dump(translated, sys.stdout)


if __name__ == "__main__":
    main()
