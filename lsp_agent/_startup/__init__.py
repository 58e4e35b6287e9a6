"""Start-up and memory tricks of the lsp-agent process, standard library only, each with what
measures it (run the bench before and after touching one):

- `pydantic_plugins.install` (the CLI, before pydantic loads): no plugin search — start-up time in
  bench/startup.py, peak RSS in bench/loop_overhead.py.
- `memory.release_soon` (after a run, after a session is dropped): glibc's `malloc_trim` returns
  freed heap pages — RSS over a long session in bench/loop_overhead.py and
  tests/reliability/test_memory.py.
- `memory.settle_startup` (once the server is up): start-up objects frozen out of the cyclic
  collector — the pause a full collection caused mid-stream, in bench/lsp_latency.py.
- `memory.drop_frames` (after a failed request): a caught error's frames let go of the request at
  once — tests/reliability/test_memory.py.
"""
