# A user inference script for workload tests (never run by them).
import kope_deploy


def build():
    raise NotImplementedError


def run(model, request):
    with kope_deploy.phase("prefill"):
        pass
