"""torch.Generator and the functions that take one; randperm, multinomial and the other samplers with PyTorch's
shapes, dtypes and errors."""
import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn


def draws(generator=None):
    """One draw of each function that takes generator=, as plain lists."""
    out = [torch.rand(3, generator=generator), torch.randn(2, 2, generator=generator),
           torch.randint(0, 10, (4,), generator=generator), torch.randperm(6, generator=generator),
           torch.multinomial(torch.tensor([0.2, 0.3, 0.5]), 2, generator=generator),
           torch.zeros(3).normal_(generator=generator), torch.zeros(3).uniform_(-1, 1, generator=generator),
           nn.init.normal_(torch.zeros(2), generator=generator)]
    return [t.tolist() for t in out]


def test_the_same_seed_gives_the_same_stream_and_leaves_the_global_one_alone():
    torch.manual_seed(11)
    plain = torch.rand(4).tolist()
    torch.manual_seed(11)
    first = draws(torch.Generator().manual_seed(5))
    assert torch.rand(4).tolist() == plain          # the generator's draws did not move the global stream
    assert draws(torch.Generator().manual_seed(5)) == first
    assert draws(torch.Generator().manual_seed(6)) != first
    g = torch.Generator()
    assert draws(g) != draws(g)                      # a generator advances


def test_generator_seeds_as_pytorch():
    g = torch.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == torch.device("cpu")
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        g.manual_seed(2 ** 64)
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert torch.Generator(device="cpu").device.type == "cpu"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        torch.Generator(device="tpu")


def test_generator_state_round_trips_and_refuses_what_is_not_a_state():
    g = torch.Generator().manual_seed(8)
    torch.randn(5, generator=g)
    state = g.get_state()
    assert state.dtype is torch.uint8 and state.ndim == 1
    after = torch.randn(7, generator=g).tolist()
    g.manual_seed(99)
    assert g.set_state(state) is g and g.initial_seed() == 8
    assert torch.randn(7, generator=g).tolist() == after
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        g.set_state([1, 2])
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(torch.zeros(state.shape[0]))
    with pytest.raises(RuntimeError, match="found the input RNG state size to be 3"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))
    assert torch.randn(7, generator=g.set_state(state)).tolist() == after      # the refusals changed nothing


def test_the_global_stream_as_a_generator():
    assert torch.manual_seed(4) is torch.default_generator and torch.initial_seed() == 4
    state = torch.get_rng_state()
    a = torch.rand(5).tolist()
    torch.set_rng_state(state)
    assert torch.rand(5).tolist() == a
    torch.manual_seed(4)
    assert torch.rand(5, generator=torch.default_generator).tolist() == a


@pytest.mark.parametrize("call", [lambda: torch.rand(2, generator=3), lambda: torch.randperm(3, generator=3),
                                  lambda: torch.multinomial(torch.ones(2), 1, generator="g"),
                                  lambda: torch.zeros(2).normal_(generator=1)])
def test_a_generator_argument_that_is_not_one_is_a_type_error(call):
    with pytest.raises(TypeError, match="generator"):
        call()


def test_randperm_shapes_dtypes_and_errors():
    p = torch.randperm(10)
    assert p.dtype is torch.int64 and sorted(p.tolist()) == list(range(10))
    assert torch.randperm(0).shape == (0,) and torch.randperm(0).dtype is torch.int64
    f = torch.randperm(5, dtype=torch.float32)
    assert f.dtype is torch.float32 and sorted(f.tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert torch.randperm(4, dtype=torch.int32).dtype is torch.int32
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        torch.randperm(-1)
    with pytest.raises(TypeError, match=r"randperm\(\): argument 'n' \(position 1\) must be int, not float"):
        torch.randperm(3.0)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        torch.randperm(300, dtype=torch.uint8)


def test_multinomial_shapes_and_draws():
    p = torch.tensor([0.1, 0.0, 0.9])
    one = torch.multinomial(p, 2)
    assert one.dtype is torch.int64 and one.shape == (2,) and len(set(one.tolist())) == 2
    assert 1 not in torch.multinomial(p, 500, replacement=True).tolist()      # a zero weight is never drawn
    rows = torch.multinomial(torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), 2)
    assert rows.shape == (2, 2) and rows[:, 0].tolist() == [1, 0]             # the only weight comes first
    assert torch.multinomial(torch.tensor([0.0, 1.0, 0.0]), 3)[0].item() == 1  # then zero weights, no error
    assert torch.multinomial(torch.tensor([1.0, 1.0], dtype=torch.float16), 2).dtype is torch.int64
    counts = np.bincount(torch.tensor([1.0, 3.0]).multinomial(20000, True).numpy(), minlength=2)
    assert abs(counts[1] / 20000 - 0.75) < 0.02                               # weights need not sum to 1


@pytest.mark.parametrize("args, error, message", [
    ((torch.tensor([0.1, 0.0, 0.9]), 4), RuntimeError, "cannot sample n_sample > prob_dist.size(-1) samples without "
                                                      "replacement"),
    ((torch.tensor([0.5, 0.5]), 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
    ((torch.tensor([1, 2]), 1), RuntimeError, "multinomial only supports floating-point dtypes for input, got: Long"),
    ((torch.zeros(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    ((torch.tensor(1.0), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    ((torch.tensor([-1.0, 2.0]), 1), RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
    ((torch.tensor([float("nan"), 1.0]), 1), RuntimeError, "probability tensor contains either"),
    ((torch.tensor([0.0, 0.0]), 1), RuntimeError, "invalid multinomial distribution (sum of probabilities <= 0)"),
    ((torch.tensor([0.5, 0.5]), 2.0), TypeError, "argument 'num_samples' (position 2) must be int, not float"),
])
def test_multinomial_refuses_as_pytorch(args, error, message):
    with pytest.raises(error) as e:
        torch.multinomial(*args)
    assert message in str(e.value)


def test_normal_and_uniform_in_place():
    t = torch.zeros(1000, dtype=torch.float16)
    assert t.uniform_(2, 3) is t and t.dtype is torch.float16
    v = t.numpy().astype(np.float32)
    assert v.min() >= 2 and v.max() <= 3 and len(set(v.tolist())) > 100
    n = torch.zeros(20000).normal_(1.0, 0.5).numpy()
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0"):
        torch.zeros(2).uniform_(1, 0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        torch.zeros(2).normal_(0, -1)


def test_the_other_samplers_take_a_generator_and_keep_dtypes():
    def run(g):
        out = [torch.rand_like(torch.zeros(3, dtype=torch.float16), generator=g),
               torch.randn_like(torch.zeros(2, 2), generator=g), torch.randint_like(torch.zeros(4), 3, 9, generator=g),
               torch.bernoulli(torch.tensor([0.0, 1.0, 0.5, 0.5]), generator=g),
               torch.normal(torch.zeros(2, 1), torch.ones(3), generator=g), torch.normal(2.0, 0.5, (3,), generator=g),
               torch.zeros(3, dtype=torch.int64).random_(5, generator=g), torch.zeros(3).random_(generator=g),
               torch.zeros(3).bernoulli_(0.5, generator=g), torch.zeros(3).exponential_(generator=g)]
        return [(t.dtype, tuple(t.shape), t.tolist()) for t in out]
    first = run(torch.Generator().manual_seed(1))
    assert first == run(torch.Generator().manual_seed(1))
    dtypes = [d for d, _, _ in first]
    assert dtypes[0] is torch.float16 and dtypes[2] is torch.float32 and dtypes[6] is torch.int64
    assert first[4][1] == (2, 3) and first[3][2][:2] == [0.0, 1.0]
    assert set(first[2][2]) <= set(range(3, 9)) and set(first[6][2]) <= set(range(5))
    assert all(0 <= v <= 2 ** 24 and v == int(v) for v in first[7][2])        # float32 holds these integers exactly


@pytest.mark.parametrize("call, error, message", [
    (lambda: torch.rand_like(torch.zeros(2, dtype=torch.int64)), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: torch.bernoulli(torch.tensor([2.0])), RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda: torch.normal(torch.zeros(2), -1.0), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.zeros(2).exponential_(-1), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda: torch.zeros(2).bernoulli_(2.0), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=2"),
    (lambda: torch.zeros(3).random_(5, 3), RuntimeError, "random_ expects 'from' to be less than 'to', but got "
                                                         "from=5 >= to=3"),
])
def test_the_other_samplers_refuse_as_pytorch(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert message in str(e.value)


def test_torch_random_module_and_fork_rng():
    import minifp.torch.random as random
    assert torch.random is random and random.manual_seed(2) is torch.default_generator
    before = torch.rand(3).tolist()
    random.manual_seed(2)
    with torch.random.fork_rng():
        torch.manual_seed(50)
        torch.rand(10)
    assert torch.rand(3).tolist() == before and torch.initial_seed() == 2      # the block's draws are forgotten
    state = torch.get_rng_state()
    with torch.random.fork_rng(enabled=False):
        torch.rand(1)
    after = torch.rand(3).tolist()
    torch.set_rng_state(state)
    torch.rand(1)
    assert torch.rand(3).tolist() == after                                     # disabled: the draw counted


def test_a_generator_of_another_device_is_refused():
    cuda = torch.Generator(device="cuda")
    assert cuda.device.type == "cuda"
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        torch.rand(2, generator=cuda)
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
        torch.zeros(2, device="cuda").normal_(generator=torch.Generator())
    assert torch.randn(3, device="cuda", generator=cuda).shape == (3,)
