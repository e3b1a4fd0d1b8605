
final_answers = {
    question: {"value": None, "text": "not answered: the offline analyst does not compute answers to free-form questions"}
    for question in __QUESTIONS__
}
for _bcc_q in final_answers:
    print(f"- {_bcc_q} -> not answered")
_bcc_result(f"{_bcc_count(len(final_answers), 'question')} listed in final_answers; the offline analyst answered none of them.")
