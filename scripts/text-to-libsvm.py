#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
# Turns labelled text into LIBSVM lines with the hashing trick, for
# dml-svm-sgd and dml-logreg (docs/trainers.md, "Your own sparse data").
#
#     scripts/text-to-libsvm.py --bits 18 train.tsv > train.svm
#     scripts/text-to-libsvm.py --bits 18 --idf-from train.tsv test.tsv > test.svm
#
# Input: one document per line, "LABEL<TAB>text" (a label such as 1/-1 or
# 0..C-1, then the words). Each word (lower-cased runs of letters and
# digits) is hashed into one of 2^bits features with a fixed hash (BLAKE2b,
# so every run and machine gives the same index; Python's hash() does not);
# distinct words that share a feature simply add up. A value is
# (1 + ln tf) * idf, idf = ln((1 + N) / (1 + df)) + 1 over the documents of
# --idf-from (default: the input itself; give the training file when
# converting the test file, so both use the same weights), and every row is
# scaled to unit length. Plain Python 3, no packages.
import argparse
import hashlib
import math
import re
import sys

WORD = re.compile(r"[0-9a-z]+")


def feature(word, bits):
    digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - bits)


def documents(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            label, tab, text = line.partition("\t")
            label = label.strip()
            if not tab or not re.fullmatch(r"[-+]?[0-9]+", label):
                raise SystemExit(f"text-to-libsvm: {path}:{number}: expected 'LABEL<TAB>text' with a whole-number label")
            yield int(label), WORD.findall(text.lower())


def main():
    p = argparse.ArgumentParser(description="labelled text (LABEL<TAB>text) to LIBSVM with hashed words")
    p.add_argument("input", help="LABEL<TAB>text lines")
    p.add_argument("--bits", type=int, default=18, help="2^bits features (4..26), default 18")
    p.add_argument("--idf-from", help="the documents that define idf (default: the input)")
    args = p.parse_args()
    if not 4 <= args.bits <= 26:
        p.error("--bits must be 4..26")
    df, n = {}, 0
    for _, words in documents(args.idf_from or args.input):
        n += 1
        for f in {feature(w, args.bits) for w in words}:
            df[f] = df.get(f, 0) + 1
    out = sys.stdout
    for label, words in documents(args.input):
        tf = {}
        for w in words:
            f = feature(w, args.bits)
            tf[f] = tf.get(f, 0) + 1
        row = {f: (1 + math.log(c)) * (math.log((1 + n) / (1 + df.get(f, 0))) + 1) for f, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in row.values())) or 1.0
        out.write(str(label) + "".join(f" {f + 1}:{v / norm:.6g}" for f, v in sorted(row.items())) + "\n")


if __name__ == "__main__":
    main()
