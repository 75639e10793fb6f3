"""Client: reads this site's rows from data/<site>.csv (a relative path) and sends the model back unchanged."""

import nvflare.client as flare

flare.init()
site = flare.get_site_name()
while flare.is_running():
    model = flare.receive()
    with open(f"data/{site}.csv") as handle:  # relative: resolved against the working directory
        handle.read()
    flare.send(model)
