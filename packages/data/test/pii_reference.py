"""Independent reference for the PII vectors in test/golden/pii-vectors.json.

Restates training-recipe.md §7.2 with Python's own `re` engine (the engine the
Apertus formatter runs on): for e-mail, then IPv4, then IBAN, `findall` on the
current text and, for each match not seen before in the document, replace every
occurrence of that string with the token. `pii_count` = number of distinct hits.

Run: /usr/bin/python3 packages/data/test/pii_reference.py > packages/data/test/golden/pii-vectors.json
The TypeScript test (src/filters/pii.test.ts) must reproduce every vector.
"""
import json
import random
import re

EMAIL = re.compile(
    r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
    r"(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"|\[(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?|[A-Za-z0-9-]*[A-Za-z0-9]:)\])"
)
IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)")
IBAN = re.compile(r"[A-Z]{2}[0-9]{2}(?: [0-9]{4}){4} [A-Z0-9]{1,2}")


def reference(text):
    seen = set()
    counts = {}
    for kind, regex, token in (("email", EMAIL, "<email-pii>"), ("ipv4", IPV4, "<ip-pii>"), ("iban", IBAN, "<iban-pii>")):
        for match in regex.findall(text):
            if match in seen:
                continue
            seen.add(match)
            counts[kind] = counts.get(kind, 0) + 1
            text = text.replace(match, token)
    return text, len(seen), counts


HANDWRITTEN = [
    "Contact me at john.doe@example.com or jane@mail.example.org.",
    "Write to user@[192.168.0.1] or admin@[IPv6:2001:db8::1].",
    "Server 10.0.0.1 and 10.0.0.1 again; version 1.2.3.4.5 released",
    "256.1.1.1 is not a valid address but 255.255.255.255 is",
    "IBAN CH93 0076 2011 6238 5295 7 and DE89 3704 0044 0532 0130 00.",
    "No IBAN: DE89370400440532013000, GB82 WEST 1234 5698 7654 32, ch93 0076 2011 6238 5295 7",
    "éabc@example.com and x_abc@example.com and 日本user.name@example.com",
    "a@b.co and a@b.com",
    "1.1.1.1 and 11.1.1.1",
    "root@10.0.0.1 logged in from 10.0.0.2",
    "not an email: john@ or @example.com or john@@example.com or john@-bad-.com",
    "Phone +41 44 123 45 67 is kept; so is 044-123-45-67.",
    "!#$%&'*+/=?^_`{|}~-@example.com",
    "mixed: bob@example.com, 192.168.1.1, FR14 2004 1010 0505 0001 3M0 2606",
    "",
]

random.seed(9309)
ALPHABET = list("abcxyzABCXYZ0123456789") * 3 + list(".@ []:-_é日+'") * 2
FRAGMENTS = ["@", "example.com", "192.168.", "255.", "CH93 0076 2011 6238 5295 7", "[10.0.0.1]", "a.b", " ", ".", "25", "1"]
FUZZ = []
for _ in range(300):
    parts = []
    for _ in range(random.randint(1, 12)):
        if random.random() < 0.4:
            parts.append(random.choice(FRAGMENTS))
        else:
            parts.append("".join(random.choice(ALPHABET) for _ in range(random.randint(1, 6))))
    FUZZ.append("".join(parts))

vectors = []
for text in HANDWRITTEN + FUZZ:
    out, count, counts = reference(text)
    vectors.append({"input": text, "output": out, "pii_count": count, "counts": counts})
print(json.dumps({"generator": "packages/data/test/pii_reference.py", "vectors": vectors}, ensure_ascii=False, indent=1))
