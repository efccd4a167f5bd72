"""A character-level LSTM on a short text, trained for 50 steps: Embedding, LSTM, Linear,
CrossEntropyLoss and Adam, fed by a shuffling DataLoader of (context, next characters)
windows. Run with real PyTorch in place of adcompile (one thread) it prints the same losses:
the network's forward and backward are PyTorch's to the bit, and so is Adam's square root
(MKL's, not correctly rounded) where the `mkl` extra is installed; without it that root
differs in the last bit, and the last printed digit moves from step 30.

Run: python examples/char_lstm.py
"""

import adcompile as torch
from adcompile import nn

TEXT = ("the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat "
        "and the bird sings in the tall green tree by the quiet river bank")
STEPS, WINDOW = 50, 12

torch.manual_seed(0)
chars = sorted(set(TEXT))
codes = torch.tensor([chars.index(c) for c in TEXT])
starts = range(len(TEXT) - WINDOW - 1)
inputs = torch.stack([codes[s:s + WINDOW] for s in starts])
targets = torch.stack([codes[s + 1:s + WINDOW + 1] for s in starts])
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets),
                                     batch_size=16, shuffle=True, drop_last=True)


class CharModel(nn.Module):
    def __init__(self, vocab, width=24):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.lstm = nn.LSTM(16, width, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return self.head(out)


model = CharModel(len(chars))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
step = 0
while step < STEPS:
    for x, y in loader:
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
        loss.backward()
        optimizer.step()
        print(f"step {step:2d}  loss {loss.item():.6f}")
        step += 1
        if step == STEPS:
            break
