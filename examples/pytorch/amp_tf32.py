"""The Chinese post's torch.amp loop (../shared/seeds/002) with its advice applied, run on minifp: TF32 on
for matmuls and convolutions, float16 autocast with GradScaler, and a region with autocast disabled.

Changed from the original: the import lines; the data source and the model the post leaves to the reader
(the digits bundled with minifp and a small MLP whose forward returns the loss, as `loss = model(data)`).
"""
import minifp.torch as torch
from minifp.datasets import load_digits

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, data, label):
        logits = self.net(data)
        with torch.amp.autocast(device_type="cuda", enabled=False):    # the loss in float32, by hand
            return self.loss(logits.float(), label)


(x_train, y_train), (x_test, y_test) = load_digits()
x_train, x_test = x_train.reshape(-1, 64), x_test.reshape(-1, 64)
train = torch.utils.data.TensorDataset(torch.tensor(x_train), torch.tensor(y_train))
data_iter = torch.utils.data.DataLoader(train, batch_size=32, shuffle=True)
model = Model().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

scaler = torch.cuda.amp.GradScaler()
for epoch in range(5):
    for data, label in data_iter:
        data, label = data.cuda(), label.cuda()
        optimizer.zero_grad()
        # Casts operations to mixed precision
        with torch.amp.autocast(device_type="cuda", dtype=torch.float16):
            loss = model(data, label)
        # Scales the loss, and calls backward()
        # to create scaled gradients
        scaler.scale(loss).backward()
        # Unscales gradients and calls
        # or skips optimizer.step()
        scaler.step(optimizer)
        # Updates the scale for next iteration
        scaler.update()

with torch.no_grad():
    predicted = model.net(torch.tensor(x_test).cuda()).argmax(dim=1)
accuracy = (predicted.numpy() == y_test).mean()
print(f"test accuracy {accuracy:.4f}, loss scale {scaler.get_scale():g}")
