#!/usr/bin/env python3
"""Picks at most CAP corpus files that cover the most coverage edges, greedily, from a libFuzzer
merge control file (`-merge=1 -merge_control_file=FILE`): its `COV <file index> <edge>...` lines
say which edges each file reaches. Prints the chosen paths, one a line; the figures on stderr.
Usage: cap_corpus.py CONTROL_FILE CAP"""

import sys


def main():
    control, cap = sys.argv[1], int(sys.argv[2])
    lines = open(control).read().split("\n")
    count = int(lines[0])
    files = lines[2 : 2 + count]
    edges = {}
    for line in lines[2 + count :]:
        parts = line.split()
        if parts and parts[0] == "COV":
            edges[int(parts[1])] = set(parts[2:])
    total = set().union(*edges.values()) if edges else set()
    chosen, covered = [], set()
    while len(chosen) < cap and edges:
        best = max(edges, key=lambda i: (len(edges[i] - covered), -i))
        if not edges[best] - covered:
            break
        chosen.append(best)
        covered |= edges.pop(best)
    print(f"{len(chosen)} of {len(files)} files keep {len(covered)} of {len(total)} edges", file=sys.stderr)
    for index in chosen:
        print(files[index])


if __name__ == "__main__":
    main()
