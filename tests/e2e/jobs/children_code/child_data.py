"""A dataset read by a DataLoader's forked workers (the ``children.py`` job)."""

import time

import torch.utils.data
from child_work import released


class Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        while not released():
            time.sleep(0.02)
        square = i * i  # BREAK item
        return square
