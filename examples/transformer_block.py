"""A small transformer block (MultiheadAttention, LayerNorm, GELU feed-forward) learning to
predict a shifted sequence, trained for 50 steps with AdamW and a cosine learning-rate
schedule, fed by a DataLoader. Run with real PyTorch in place of adcompile it prints the same
losses.

Run: python examples/transformer_block.py
"""

import adcompile as torch
from adcompile import nn

STEPS, WIDTH, LENGTH = 50, 16, 8

torch.manual_seed(0)
sequences = torch.randn(96, LENGTH, WIDTH)
targets = torch.cat([sequences[:, -1:], sequences[:, :-1]], 1) * 0.5
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(sequences, targets),
                                     batch_size=16, shuffle=True)


class Block(nn.Module):
    def __init__(self, width, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                nn.Linear(4 * width, width))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


model = Block(WIDTH)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
loss_fn = nn.MSELoss()
step = 0
while step < STEPS:
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step:2d}  lr {scheduler.get_last_lr()[0]:.6f}  loss {loss.item():.6f}")
        step += 1
        if step == STEPS:
            break
