"""kope_deploy: profiles a language-model inference workload by phase and turns the places where
its time goes into kope tasks (`kope deploy profile`; docs/commands/deploy.md, docs/PROFILE_JSON.md).

The public API, for a user's own inference script (a workload whose `model.script` names it):

    import kope_deploy

    def build():                      # -> the model (an nn.Module), on the device it runs on
        ...

    def run(model, request):          # one request: request["batch"], ["prompt"], ["decode"]
        with kope_deploy.phase("prefill"):
            ...                       # the prompt's forward
        for _ in range(request["decode"]):
            with kope_deploy.phase("decode"):
                ...                   # one token step

Each `with phase("decode")` block counts as one decode step; a block that runs several steps says
how many: `phase("decode", steps=n)`. Outside a profile, phase() does nothing, so the script runs
unchanged without kope.
"""
from .phases import phase

__all__ = ["phase"]
