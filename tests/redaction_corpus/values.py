"""Generated secret values for the redaction corpus: random bodies in each provider's published shape,
and checksummed identifiers made valid with python-stdnum. Never real secrets."""

from __future__ import annotations

import base64
import random
import string

from stdnum import luhn, verhoeff
from stdnum.iso7064 import mod_97_10

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
HEX = "0123456789abcdef"
B62 = LOWER + UPPER + DIGITS
B64 = B62 + "+/"
URLSAFE = B62 + "-_"


class Values:
    """Random values from one seeded generator (the corpus is the same on every run)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, items):
        return self.rng.choice(items)

    def chars(self, alphabet: str, length: int) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(length))
            # Generated keys mix their classes; a body without a digit or a letter is re-drawn.
            if length < 12 or alphabet == HEX or (any(c.isdigit() for c in value) or not set(alphabet) & set(DIGITS)):
                return value

    def b62(self, length: int) -> str:
        return self.chars(B62, length)

    def hex(self, length: int) -> str:
        return self.chars(HEX, length)

    def b64(self, length: int) -> str:
        return self.chars(B64, length)

    def urlsafe(self, length: int) -> str:
        return self.chars(URLSAFE, length)

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def b64_of(self, raw: str) -> str:
        return base64.b64encode(raw.encode()).decode()

    def password(self, length: int = 14) -> str:
        symbols = "!@#$%^&*-_=+?~"
        body = [self.rng.choice(LOWER), self.rng.choice(UPPER), self.rng.choice(DIGITS), self.rng.choice(symbols)]
        body += [self.rng.choice(LOWER + UPPER + DIGITS + symbols) for _ in range(length - 4)]
        self.rng.shuffle(body)
        return "".join(body)

    def words(self, count: int) -> str:
        vocabulary = (
            "amber lantern orbit violet canyon harbor maple quartz willow falcon ember meadow copper "
            "thistle glacier saffron nimbus cobalt juniper tundra basalt cedar orchid pebble"
        ).split()
        return " ".join(self.rng.sample(vocabulary, count))

    def jwt(self) -> str:
        header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        sub = self.rng.randint(10_000, 99_999)
        body = base64.urlsafe_b64encode(f'{{"sub":"{sub}","exp":1893456000}}'.encode()).decode().rstrip("=")
        return f"{header}.{body}.{self.urlsafe(43)}"

    def pem_body(self, lines: int, first: str = "MIIEowIBAAKCAQEA") -> str:
        rows = [first + self.b64(64 - len(first))] + [self.b64(64) for _ in range(lines - 1)]
        return "\n".join(rows)

    # --- checksummed identifiers -------------------------------------------------------------------

    def card(self, prefix: str, length: int, groups: tuple[int, ...] | None = None) -> str:
        body = prefix + "".join(self.rng.choice(DIGITS) for _ in range(length - len(prefix) - 1))
        number = body + luhn.calc_check_digit(body)
        if not groups:
            return number
        parts, position = [], 0
        for size in groups:
            parts.append(number[position : position + size])
            position += size
        return " ".join(parts)

    def iban(self, country: str, bban_shape: str) -> str:
        from stdnum import iban

        for _ in range(5000):
            bban = "".join(self._shape_char(kind) for kind in bban_shape)
            check = mod_97_10.calc_check_digits(bban + country)
            value = country + check + bban
            if iban.is_valid(value):
                return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
        raise RuntimeError(f"no valid IBAN for {country}")

    def _shape_char(self, kind: str) -> str:
        return self.rng.choice({"n": DIGITS, "a": UPPER, "c": UPPER + DIGITS}[kind])

    def valid(self, module: str, make) -> str:
        """A value from `make()` that the stdnum module accepts (drawn again until it does)."""
        import importlib

        is_valid = importlib.import_module(f"stdnum.{module}").is_valid
        for _ in range(20_000):
            value = make()
            if is_valid(value):
                return value
        raise RuntimeError(f"no valid {module}")

    def digits(self, length: int, first: str = "123456789") -> str:
        return self.rng.choice(first) + "".join(self.rng.choice(DIGITS) for _ in range(length - 1))

    def date6(self) -> str:
        return f"{self.rng.randint(60, 99):02d}{self.rng.randint(1, 12):02d}{self.rng.randint(1, 28):02d}"

    def aadhaar(self) -> str:
        body = self.digits(11, "23456789")
        number = body + verhoeff.calc_check_digit(body)
        return f"{number[:4]} {number[4:8]} {number[8:]}"
