"""Stand-in frozen evaluator: reads the persisted .npy model and prints {"accuracy": v, "n": samples} for a site.

Run: python evaluate_model.py --model server.npy --site site-1 [--format numpy]
"""

import argparse
import json

from evalhelpers import held_out_value, read_npy, site_size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--site", required=True)
    parser.add_argument("--format", default="numpy")
    args = parser.parse_args()
    weights = read_npy(args.model)
    print(json.dumps({"accuracy": held_out_value(weights, args.site), "n": site_size(args.site)}))


if __name__ == "__main__":
    main()
