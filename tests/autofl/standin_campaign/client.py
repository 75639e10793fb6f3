"""Stand-in client: the score is a pure function of the arguments, so candidates have something to tune."""

import argparse

BONUS = 0.0


def evaluate(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--local_steps", type=int, default=5)
    parser.add_argument("--use_bonus", action="store_true")
    args = parser.parse_args(argv)
    score = 0.8 - abs(args.lr - 0.2) + 0.01 * min(args.local_steps, 10) + BONUS
    return round(score + (0.05 if args.use_bonus else 0.0), 6)
