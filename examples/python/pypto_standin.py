"""A stand-in for the parts of PyPTO the example touches, so that it runs where PyPTO
is not installed: the tile setters record their calls, `frontend.jit` runs the
function as plain Python, and matmul returns the shape of its result. With PyPTO
installed, `import pypto` replaces all of this."""

calls: list[str] = []


def set_vec_tile_shapes(*shape: int) -> None:
    calls.append(f"set_vec_tile_shapes({', '.join(map(str, shape))})")


def set_cube_tile_shapes(m: list[int], k: list[int], n: list[int], enable_split_k: bool = False) -> None:
    calls.append(f"set_cube_tile_shapes({m}, {k}, {n}{', enable_split_k=True' if enable_split_k else ''})")


class Tensor:
    def __init__(self, shape: list[int], dtype: str = "fp16") -> None:
        self.shape = list(shape)
        self.dtype = dtype

    def move(self, other: "Tensor") -> None:
        assert self.shape == other.shape, f"result {other.shape} does not fit {self.shape}"


def matmul(a: Tensor, b: Tensor, dtype: str) -> Tensor:
    assert a.shape[1] == b.shape[0], "inner dimensions differ"
    return Tensor([a.shape[0], b.shape[1]], dtype)


class frontend:  # noqa: N801 (pypto.frontend is a module)
    @staticmethod
    def jit(function=None, **_options):
        return function if function is not None else (lambda f: f)
