#!/usr/bin/env bash
# `make destroy`: deletes the stack samconfig.toml names (sam delete, which asks first), then,
# after you type the stack's name, what the stack retains by design (template.yaml's
# DeletionPolicy: Retain): the ledger table (deletion protection turned off first) and the
# payload bucket with the archive. Lists the senders' secrets left, with the command that
# deletes them. Needs the AWS CLI and the SAM CLI (.venv-sam, `make deploy` installs it).
set -euo pipefail

SAM=${SAM:-.venv-sam/bin/sam}
CONFIG=${CONFIG:-samconfig.toml}

# samconfig.toml's first `key = "value"` (what `inbox-ops init` and `sam deploy --guided` write).
setting() { sed -n "s/^$1 *= *\"\(.*\)\"\$/\1/p" "$CONFIG" | head -n 1; }
stack=$(setting stack_name); stack=${stack:-webhook-inbox}
region=$(setting region); region=${region:-${AWS_REGION:-${AWS_DEFAULT_REGION:-$(aws configure get region || true)}}}
if [ -z "$region" ]; then
  echo "destroy: no region (samconfig.toml's region, AWS_REGION or the AWS config)" >&2
  exit 1
fi

output() {
  aws cloudformation describe-stacks --region "$region" --stack-name "$stack" \
    --query "Stacks[0].Outputs[?OutputKey=='$1'].OutputValue" --output text
}
echo "==> the stack $stack in $region"
if ! ledger=$(output LedgerTableName 2>/dev/null); then
  echo "destroy: no stack $stack in $region (nothing to delete; retained resources from an earlier stack: docs/deploying.md, Teardown)" >&2
  exit 1
fi
bucket=$(output PayloadBucketName)

"$SAM" delete --stack-name "$stack" --region "$region" --config-file "$CONFIG"
if aws cloudformation describe-stacks --region "$region" --stack-name "$stack" >/dev/null 2>&1; then
  echo "destroy: the stack $stack still exists (sam delete answered no, or failed): nothing else deleted" >&2
  exit 1
fi

cat <<TEXT

The stack is gone. It retained, by design (DeletionPolicy: Retain):
  the ledger table  $ledger   (every key: a sender's retry of an event already done would run it again)
  the payload bucket $bucket  (the archive replays read: every body, gone)
A new stack makes a new, empty table and bucket.
TEXT
read -r -p "Type the stack's name ($stack) to delete both now, anything else to keep them: " answer
if [ "$answer" = "$stack" ]; then
  echo "==> the ledger table $ledger"
  aws dynamodb update-table --region "$region" --table-name "$ledger" --no-deletion-protection-enabled >/dev/null
  aws dynamodb delete-table --region "$region" --table-name "$ledger" >/dev/null
  aws dynamodb wait table-not-exists --region "$region" --table-name "$ledger"
  echo "==> the payload bucket $bucket"
  aws s3 rb "s3://$bucket" --force --region "$region"
else
  echo "Kept: $ledger and $bucket (docs/deploying.md, Teardown, removes them later)."
fi

secrets=$(aws secretsmanager list-secrets --region "$region" \
  --filters Key=name,Values="$stack/" --query 'SecretList[].Name' --output text)
if [ -n "$secrets" ]; then
  echo
  echo "Not the stack's, so left: the senders' secrets ($secrets). To delete one at once (its name free again):"
  echo "  aws secretsmanager delete-secret --region $region --force-delete-without-recovery --secret-id <name>"
fi
