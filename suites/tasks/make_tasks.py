#!/usr/bin/env python3
"""Writes the shipped tasks of suites/tasks/ (run by hand; the outputs are committed).

Usage:  python3 suites/tasks/make_tasks.py

Every item was written for this project (templates and word lists below, filled with a fixed
seed) and is released under CC0-1.0, as each file's header says. No dataset was copied.
  arithmetic.jsonl      generate, last_number: one- and two-step word problems (150 items)
  facts.jsonl           multiple_choice by loglikelihood: general facts, 4 choices (60 items)
  copying.jsonl         logprob_target: repeat a word or a short list (120 items)
  format.jsonl          generate, regex: answer in a required format (100 items)
Needs only the Python standard library.
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
LICENCE = "CC0-1.0 (written for day0 harness; no third-party data)"

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kemal",
         "Lena", "Mo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tariq"]
THINGS = ["apples", "books", "marbles", "stamps", "pencils", "shells", "cards", "coins",
          "stickers", "plums"]
WORDS = ["river", "candle", "window", "garden", "pepper", "silver", "tunnel", "marble", "rocket",
         "velvet", "harbor", "lantern", "meadow", "pebble", "saddle", "thunder", "violet", "walnut",
         "anchor", "bridge", "castle", "desert", "engine", "forest", "glacier", "hammer", "island",
         "jacket", "kettle", "ladder"]

FACTS = [
    ("What is the capital of France?", ["Paris", "Rome", "Madrid", "Berlin"], 0),
    ("What is the capital of Japan?", ["Seoul", "Tokyo", "Beijing", "Bangkok"], 1),
    ("What is the capital of Italy?", ["Milan", "Naples", "Rome", "Turin"], 2),
    ("What is the capital of Canada?", ["Toronto", "Vancouver", "Montreal", "Ottawa"], 3),
    ("What is the capital of Australia?", ["Canberra", "Sydney", "Melbourne", "Perth"], 0),
    ("What is the capital of Egypt?", ["Alexandria", "Cairo", "Luxor", "Giza"], 1),
    ("What is the capital of Kenya?", ["Mombasa", "Kisumu", "Nairobi", "Nakuru"], 2),
    ("What is the capital of Brazil?", ["Rio de Janeiro", "Sao Paulo", "Salvador", "Brasilia"], 3),
    ("What is the capital of Spain?", ["Madrid", "Barcelona", "Seville", "Valencia"], 0),
    ("What is the capital of Germany?", ["Munich", "Berlin", "Hamburg", "Cologne"], 1),
    ("How many legs does a spider have?", ["six", "four", "eight", "ten"], 2),
    ("How many days are in a week?", ["five", "six", "eight", "seven"], 3),
    ("How many minutes are in an hour?", ["sixty", "thirty", "hundred", "forty"], 0),
    ("How many sides does a triangle have?", ["four", "three", "five", "six"], 1),
    ("How many months are in a year?", ["ten", "eleven", "twelve", "thirteen"], 2),
    ("Which planet is closest to the Sun?", ["Venus", "Earth", "Mars", "Mercury"], 3),
    ("Which planet is known as the red planet?", ["Mars", "Jupiter", "Saturn", "Neptune"], 0),
    ("Which is the largest planet of the solar system?", ["Saturn", "Jupiter", "Earth", "Uranus"], 1),
    ("What do bees make?", ["milk", "silk", "honey", "wax paper"], 2),
    ("What do caterpillars turn into?", ["frogs", "beetles", "spiders", "butterflies"], 3),
    ("Water freezes at how many degrees Celsius?", ["zero", "ten", "fifty", "hundred"], 0),
    ("Water boils at sea level at how many degrees Celsius?", ["fifty", "one hundred", "two hundred", "eighty"], 1),
    ("Which gas do plants take in from the air?", ["oxygen", "helium", "carbon dioxide", "neon"], 2),
    ("Which gas do humans need to breathe?", ["nitrogen", "argon", "hydrogen", "oxygen"], 3),
    ("What is the largest ocean on Earth?", ["Pacific", "Atlantic", "Indian", "Arctic"], 0),
    ("What is the longest river in Africa?", ["Congo", "Nile", "Niger", "Zambezi"], 1),
    ("Which animal is the largest mammal?", ["elephant", "giraffe", "blue whale", "hippo"], 2),
    ("Which animal is known for its black and white stripes?", ["lion", "camel", "bear", "zebra"], 3),
    ("What color is the sky on a clear day?", ["blue", "green", "red", "purple"], 0),
    ("What color are ripe bananas?", ["blue", "yellow", "black", "white"], 1),
    ("What is frozen water called?", ["steam", "dew", "ice", "fog"], 2),
    ("Which season comes after winter?", ["summer", "autumn", "winter", "spring"], 3),
    ("Which instrument has black and white keys?", ["piano", "violin", "drum", "flute"], 0),
    ("Which shape is perfectly round?", ["square", "circle", "triangle", "cube"], 1),
    ("What is the opposite of hot?", ["warm", "dry", "cold", "loud"], 2),
    ("What is the opposite of up?", ["left", "over", "near", "down"], 3),
    ("Which organ pumps blood through the body?", ["heart", "lung", "liver", "kidney"], 0),
    ("Which organ do we use to see?", ["ear", "eye", "nose", "tongue"], 1),
    ("How many hours are in a day?", ["twelve", "twenty", "twenty-four", "thirty"], 2),
    ("What is two plus two?", ["three", "five", "six", "four"], 3),
    ("What is ten minus three?", ["seven", "six", "eight", "five"], 0),
    ("What is three times three?", ["six", "nine", "twelve", "eight"], 1),
    ("Which metal is liquid at room temperature?", ["iron", "copper", "mercury", "silver"], 2),
    ("What is the chemical symbol for gold?", ["Go", "Gd", "Ag", "Au"], 3),
    ("What is the chemical symbol for water?", ["H2O", "CO2", "O2", "NaCl"], 0),
    ("Which continent is Egypt in?", ["Asia", "Africa", "Europe", "South America"], 1),
    ("Which continent is Peru in?", ["Africa", "Europe", "South America", "Asia"], 2),
    ("Which continent is India in?", ["Europe", "Africa", "Oceania", "Asia"], 3),
    ("Which language is mainly spoken in Brazil?", ["Portuguese", "Spanish", "French", "Italian"], 0),
    ("Which language is mainly spoken in Mexico?", ["Portuguese", "Spanish", "English", "Dutch"], 1),
    ("Which bird cannot fly?", ["eagle", "sparrow", "penguin", "robin"], 2),
    ("Which animal says moo?", ["dog", "cat", "sheep", "cow"], 3),
    ("What do we call a baby dog?", ["puppy", "kitten", "calf", "foal"], 0),
    ("What do we call a baby cat?", ["puppy", "kitten", "lamb", "chick"], 1),
    ("Which tool is used to cut paper?", ["hammer", "spoon", "scissors", "brush"], 2),
    ("Which direction does the Sun rise in?", ["west", "north", "south", "east"], 3),
    ("How many continents are there?", ["seven", "five", "six", "nine"], 0),
    ("Which star is closest to Earth?", ["Sirius", "the Sun", "Polaris", "Vega"], 1),
    ("What is the main ingredient of bread?", ["rice", "sugar", "flour", "salt"], 2),
    ("Which fruit is used to make wine?", ["apple", "orange", "lemon", "grape"], 3),
]


def write(name: str, header: dict, items: list[dict]) -> None:
    lines = [f"# {k}: {json.dumps(v)}" for k, v in header.items()]
    lines += [json.dumps(it, ensure_ascii=False) for it in items]
    (HERE / name).write_text("\n".join(lines) + "\n")
    print(f"{name}: {len(items)} items")


def arithmetic(rng: random.Random) -> list[dict]:
    items = []
    for i in range(150):
        who, thing = rng.choice(NAMES), rng.choice(THINGS)
        a, b, c = rng.randint(2, 40), rng.randint(2, 30), rng.randint(2, 9)
        kind = i % 3
        if kind == 0:
            q = f"{who} has {a} {thing} and gets {b} more. How many {thing} does {who} have now?"
            ans = a + b
        elif kind == 1:
            a = a + b
            q = f"{who} had {a} {thing} and gave away {b}. How many {thing} are left?"
            ans = a - b
        else:
            q = f"{who} buys {c} boxes with {b} {thing} in each and already had {a}. How many {thing} does {who} have?"
            ans = c * b + a
        items.append({"id": f"arith-{i:03d}", "question": q, "answer": str(ans)})
    return items


def copying(rng: random.Random) -> list[dict]:
    items = []
    for i in range(120):
        if i % 2 == 0:
            w = rng.choice(WORDS)
            items.append({"id": f"copy-{i:03d}", "question": f"Repeat the word: {w}", "answer": w})
        else:
            ws = rng.sample(WORDS, 3)
            items.append({"id": f"copy-{i:03d}", "question": f"Repeat the list: {', '.join(ws)}",
                          "answer": ", ".join(ws)})
    return items


def fmt(rng: random.Random) -> list[dict]:
    items = []
    for i in range(100):
        w = rng.choice(WORDS)
        if i % 2 == 0:
            items.append({"id": f"format-{i:03d}", "question": f"Write the word {w} in capital letters inside square brackets.",
                          "answer": w.upper()})
        else:
            n = rng.randint(2, 9)
            items.append({"id": f"format-{i:03d}", "question": f"Write the number {n} inside square brackets.",
                          "answer": str(n)})
    return items


def main() -> None:
    rng = random.Random(20261201)
    write("arithmetic.jsonl", {"name": "arithmetic", "licence": LICENCE, "scorer": "generate",
                               "template": "Question: {question}\nAnswer:", "extract": "last_number",
                               "max_tokens": 12, "stop": ["\n"], "fewshot": 3}, arithmetic(rng))
    facts = [{"id": f"fact-{i:03d}", "question": q, "choices": ch, "answer": a}
             for i, (q, ch, a) in enumerate(FACTS)]
    write("facts.jsonl", {"name": "facts", "licence": LICENCE, "scorer": "multiple_choice",
                          "template": "Question: {question}\nAnswer:", "choice_template": " {choice}"},
          facts)
    write("copying.jsonl", {"name": "copying", "licence": LICENCE, "scorer": "logprob_target",
                            "template": "{question}\nAnswer:", "target_template": " {answer}"},
          copying(rng))
    write("format.jsonl", {"name": "format", "licence": LICENCE, "scorer": "generate",
                           "template": "{question}\nAnswer:", "extract": "regex:\\[([^\\]]*)\\]",
                           "max_tokens": 10, "stop": ["\n"], "fewshot": 2}, fmt(rng))


if __name__ == "__main__":
    main()
