"""The presets sign.py knows, each with the function that returns its cases (see README.md)."""

from . import batched, challenges, documented, fetched, libraries, senders, standard, timed_libraries, timestamped, tokens


def _documented(preset):
    return lambda ctx: documented.sign(ctx, preset)


PRESETS = {
    **libraries.SIGNERS,
    **timed_libraries.SIGNERS,
    **standard.SIGNERS,
    **{preset: _documented(preset) for preset in documented.ROWS},
    **challenges.SIGNERS,
    **timestamped.SIGNERS,
    **tokens.SIGNERS,
    **batched.SIGNERS,
    **fetched.SIGNERS,
    **senders.SIGNERS,
}
