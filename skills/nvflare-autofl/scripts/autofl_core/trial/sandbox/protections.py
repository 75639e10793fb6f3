"""The names of the protections, the words the status file gives them and the exit of a trial not run."""

EXIT_NOT_RUN = 126
PROTECTIONS = (
    "user_namespace",
    "mount_namespace",
    "pid_namespace",
    "private_proc",
    "network",
    "workspace_view",
    "read_only_host",
    "capabilities_dropped",
)
YES = "yes"
ENFORCED, WATCHED = "enforced", "watched"
