"""Preflight of a real FLARE system (poc/prod), at `initialize --env poc|prod` with a kit and before each `submit`.

The kit is named on the command line (`--startup-kit KIT` or `--kit-id ID`): a kit folder must exist (one stat;
nothing under it is opened by the runner, the `nvflare` CLI reads it), `system status` must answer and list the
client sites, and their number must equal the fixed budget's clients: a campaign on a system with other sites
would compare runs the fixed budget does not describe. Any failure is exit 2, one line. Usage::

    kit = kit_of(options)                                    # None when no kit flag was given
    sites = check(python, kit, num_clients=2, job_folder=workspace)
"""

from __future__ import annotations

import os

from ..trial import flare_cli
from .outcome import CampaignError


def kit_of(options) -> flare_cli.Kit | None:
    """The kit the command line names (`--startup-kit` or `--kit-id`), or None; both is refused."""
    path, kit_id = getattr(options, "startup_kit", None), getattr(options, "kit_id", None)
    if path and kit_id:
        raise CampaignError("pass --startup-kit or --kit-id, not both")
    if path:
        return flare_cli.Kit(startup_kit=os.path.abspath(path))
    return flare_cli.Kit(kit_id=kit_id) if kit_id else None


def check(python: str, kit: flare_cli.Kit, *, num_clients: int | None, job_folder) -> list[str]:
    """The connected sites of the kit's system; CampaignError when the kit is missing, the system does not
    answer, or the number of sites differs from the fixed budget's clients."""
    if kit.startup_kit is not None and not os.path.isdir(kit.startup_kit):
        raise CampaignError(
            f"--startup-kit {kit.startup_kit} is not a folder; pass the admin startup kit of the running system "
            "(for POC: $NVFLARE_POC_WORKSPACE/<project>/prod_00/<admin>)"
        )
    try:
        sites = flare_cli.FlareCli(python, kit, job_folder=job_folder).system_sites()
    except flare_cli.FlareCliError as error:
        raise CampaignError(f"preflight: {error}; start the system (nvflare poc start) or fix the kit") from None
    if num_clients is not None and len(sites) != num_clients:
        listed = ", ".join(sites) or "none"
        raise CampaignError(
            f"preflight: the system lists {len(sites)} site(s) ({listed}) but the fixed budget has {num_clients} "
            f"clients; start a system with {num_clients} sites (nvflare poc prepare -n {num_clients}) or use the "
            "kit of one that has them"
        )
    return sites
