# Writes livecodebench_test.jsonl: rows in livecodebench/code_generation_lite's
# layout (texts abridged), private tests encoded as the dataset encodes them:
# base64(zlib(pickle.dumps(json.dumps(tests)))).
import base64, json, pickle, zlib

def enc(tests, protocol):
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests), protocol=protocol))).decode()

rows = [
    {
        "question_title": "Sum of Two Integers",
        "question_content": "You are given two integers A and B.\nPrint A+B.\n\nInput\n\nThe input is given from Standard Input in the following format:\nA B\n\nOutput\n\nPrint the answer.\n\nConstraints\n\n- -10^9 \\leq A, B \\leq 10^9\n\nSample Input 1\n\n2 3\n\nSample Output 1\n\n5",
        "platform": "atcoder", "question_id": "abc000_a", "contest_id": "abc000",
        "contest_date": "2023-05-06T00:00:00", "starter_code": "", "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "2 3\n", "output": "5\n", "testtype": "stdin"}]),
        "private_test_cases": enc([{"input": "-7 4\n", "output": "-3\n", "testtype": "stdin"},
                                   {"input": "1000000000 1000000000\n", "output": "2000000000\n", "testtype": "stdin"}], 4),
        "metadata": "{}",
    },
    {
        "question_title": "find-the-maximum-achievable-number",
        "question_content": "You are given two integers, num and t.\nAn integer x is called achievable if it can become equal to num after applying the following operation no more than t times:\n\nIncrease or decrease x by 1, and simultaneously increase or decrease num by 1.\n\nReturn the maximum possible achievable number.\n \nExample 1:\n\nInput: num = 4, t = 1\nOutput: 6",
        "platform": "leetcode", "question_id": "2812", "contest_id": "weekly-contest-353",
        "contest_date": "2023-07-09T00:00:00",
        "starter_code": "class Solution:\n    def theMaximumAchievableX(self, num: int, t: int) -> int:\n        ",
        "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "4\n1", "output": "6", "testtype": "functional"}]),
        "private_test_cases": enc([{"input": "3\n2", "output": "7", "testtype": "functional"},
                                   {"input": "1\n50", "output": "101", "testtype": "functional"}], 3),
        "metadata": json.dumps({"func_name": "theMaximumAchievableX"}),
    },
    {
        "question_title": "Decimal Mean",
        "question_content": "You are given N integers. Print their mean; an answer within exact decimal equality is accepted.\n\nInput\n\nN\nA_1 ... A_N",
        "platform": "atcoder", "question_id": "abc000_b", "contest_id": "abc000",
        "contest_date": "2023-05-06T00:00:00", "starter_code": "", "difficulty": "medium",
        "public_test_cases": json.dumps([{"input": "2\n1 2\n", "output": "1.5\n", "testtype": "stdin"}]),
        "private_test_cases": json.dumps([{"input": "4\n1 1 1 1\n", "output": "1.0\n", "testtype": "stdin"}]),
        "metadata": "{}",
    },
]
with open("livecodebench_test.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
