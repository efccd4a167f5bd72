"""A small CNN on random 1x28x28 "images", trained for 50 steps: Conv2d, BatchNorm2d,
MaxPool2d, Dropout (in eval mode), CrossEntropyLoss, SGD with momentum and StepLR, fed by a
shuffling DataLoader. Run with real PyTorch in place of adcompile it prints the same losses.

Run: python examples/cnn_train.py
"""

import adcompile as torch
from adcompile import nn

DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset

STEPS = 50

torch.manual_seed(0)
images = torch.randn(256, 1, 28, 28)
labels = torch.randint(0, 10, (256,))
loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Dropout(0.25), nn.Linear(16 * 6 * 6, 10),
)
model[9].eval()  # dropout off, batch norm still in training mode
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
loss_fn = nn.CrossEntropyLoss()

step = 0
while step < STEPS:
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step:2d}  lr {scheduler.get_last_lr()[0]:.5f}  loss {loss.item():.6f}")
        step += 1
        if step == STEPS:
            break
    scheduler.step()
print("running_mean[:3]", [round(v, 4) for v in model[1].running_mean[:3].tolist()])
