#!/usr/bin/python3
"""One epoch of a real image loader: torchvision's ImageFolder over ROOT (one directory per
class) and a DataLoader (shuffled, --workers processes, --batch images a batch) that decodes
every JPEG and resizes it to 224x224. Run by bench/bench_shared_loader.py with /usr/bin/python3
(where Debian's python3-torchvision is installed); prints one JSON object: images, classes,
scan_seconds (building the dataset: its directory scan), seconds (the epoch, worker start
included), images_per_s, complete (false when --budget cut the epoch).
"""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0, help="the shuffle of the epoch")
    ap.add_argument("--budget", type=float, default=0, help="seconds; 0: the whole epoch")
    args = ap.parse_args()
    t0 = time.perf_counter()
    ds = datasets.ImageFolder(args.root, transform=transforms.Compose(
        [transforms.Resize((224, 224)), transforms.ToTensor()]))
    scan = time.perf_counter() - t0
    dl = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                    generator=torch.Generator().manual_seed(args.seed))
    n, complete = 0, True
    t1 = time.perf_counter()
    for images, _ in dl:
        n += images.shape[0]
        if args.budget and time.perf_counter() - t1 > args.budget:
            complete = n == len(ds)
            break
    secs = time.perf_counter() - t1
    print(json.dumps({"images": n, "listed": len(ds), "classes": len(ds.classes),
                      "scan_seconds": scan, "seconds": secs, "images_per_s": n / secs,
                      "complete": complete}))


if __name__ == "__main__":
    main()
