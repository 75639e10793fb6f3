"""The trial sandbox launcher: run by path (`__main__`, with `python -I`), it is the trial's first program and seals
it in its own user, mount, PID (and network) namespaces on a private view of the job. Standard library only: no
module here imports the rest of autofl_core (`trial/seal.py` is the runner's side: probe, plan, status).
- `__main__` - the program run by path: loads this package by location, leaves no module of it behind;
- `main` - the arguments: `--probe [SCRATCH]` or `--plan PLAN.json -- COMMAND...`, and the plan read from its file;
- `launch` - one plan's run: the namespaces, the forked init, signals forwarded, the command's status mirrored;
- `pid_one` - the namespace's init: build the seal, run the command, reap and end every process, watch the limits;
- `sealing` - `Seal`: each protection attempted on its own (namespaces, overlays, read-only host, capabilities),
  and the status file;
- `watcher` - `Watcher`: memory, tasks and disk of the namespace from its own /proc and the writable folders;
- `limits` - set up before any namespace: the reason file, the pids cgroup, the folders the disk watch walks;
- `probe` - every protection tried on a scratch view, nothing run: the status document;
- `syscalls` - the kernel calls (ctypes): unshare, mount, mount_setattr, prctl, capset, the loopback's flags;
- `protections` - the protections' names, the status words and the exit code of a trial not run.
"""
