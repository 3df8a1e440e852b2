"""The supported-answer metric and the LoCoMo import, on a small conversation written here."""

import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command

from chatcore.models import Channel, Message
from compaction import conf
from compaction.imports import conversation_import, locomo_date, locomo_turns
from compaction.transcript import render_transcript, transcript_items
from devtools import fidelity
from devtools.loopback_llm import Reply


def tiny_locomo():
    return {
        "speaker_a": "Nora Vale",
        "speaker_b": "Omar",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Nora Vale", "dia_id": "D1:1", "text": "Hi Omar! I adopted a greyhound called Biscuit."},
            {"speaker": "Omar", "dia_id": "D1:2", "text": "Lovely! I started pottery classes in Leeds."},
        ],
        "session_2_date_time": "10:05 am on 2 June, 2023",
        "session_2": [
            {
                "speaker": "Omar",
                "dia_id": "D2:1",
                "text": "Look what I made.",
                "img_url": ["http://x/y.jpg"],
                "blip_caption": "a photo of a blue ceramic vase",
                "query": "vase",
            },
            {"speaker": "Nora Vale", "dia_id": "D2:2", "text": "Nora, that vase is gorgeous."},
        ],
        "session_3_date_time": "3:00 pm on 9 June, 2023",
        "events_session_1": ["Nora adopts a dog"],
        "session_1_summary": "Nora told Omar about Biscuit.",
        "qa": [
            {"question": "What did Nora adopt?", "answer": "a greyhound", "evidence": ["D1:1"], "category": 4},
            {
                "question": "Where does Omar take pottery classes?",
                "answer": "Leeds",
                "evidence": ["D1:2"],
                "category": 1,
            },
            {"question": "What colour is the vase Omar made?", "answer": "Blue", "evidence": ["D2:1"], "category": 3},
            {"question": "When did Nora adopt Biscuit?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
            {"question": "Did Omar ever adopt?", "answer": "No", "evidence": [], "category": 4},
            {"question": "What is Omar's cat called?", "adversarial_answer": "Biscuit", "evidence": [], "category": 5},
        ],
    }


def test_content_words_drop_stop_words_and_speaker_names():
    names = fidelity.speaker_words("Nora Vale", "Omar")
    assert names == frozenset({"nora", "vale", "omar"})
    assert fidelity.metric_words("Nora's greyhound, Biscuit, ran 5 km with Omar!", names) == frozenset(
        {"greyhound", "biscuit", "ran", "5", "km"}
    )


def test_questions_keep_categories_one_to_four():
    questions = fidelity.locomo_questions(tiny_locomo())
    assert [(q.category, q.answer) for q in questions] == [
        (4, "a greyhound"),
        (1, "Leeds"),
        (3, "Blue"),
        (2, "2023"),
        (4, "No"),
    ]
    assert questions[0].answer_words == frozenset({"greyhound"})
    assert questions[0].question_words == frozenset({"adopt"})
    assert [q.measurable for q in questions] == [True, True, True, True, False]


def test_supported_needs_every_answer_word_and_one_question_word_on_one_line():
    data = tiny_locomo()
    names = fidelity.speaker_words("Nora Vale", "Omar")
    question = fidelity.Question(
        "Where does Omar take pottery classes?",
        "Leeds",
        1,
        fidelity.metric_words("Where does Omar take pottery classes?", names),
        fidelity.metric_words("Leeds", names),
    )
    assert fidelity.is_supported(question, [fidelity.metric_words("pottery classes in Leeds", names)])
    # the answer without any question word
    assert not fidelity.is_supported(question, [fidelity.metric_words("I live in Leeds", names)])
    # the words split over two lines
    assert not fidelity.is_supported(
        question, [fidelity.metric_words("pottery classes", names), fidelity.metric_words("in Leeds", names)]
    )
    rate = fidelity.supported_rate(
        fidelity.locomo_questions(data), ["she will adopt a greyhound", "pottery", "Leeds", "the vase is blue"], names
    )
    assert (rate.supported, rate.measured) == (2, 4)
    assert rate.rate == 0.5


def test_context_lines_split_summaries_only():
    lines = fidelity.context_lines(
        [
            {"role": "user", "content": "# Summary\n- a\n\n- b", "summary": True},
            {"role": "user", "content": "one\nmessage"},
        ]
    )
    assert lines == ["# Summary", "- a", "- b", "one message"]


def test_locomo_turns_and_dates():
    turns = locomo_turns(tiny_locomo())
    assert [(t.speaker, t.role, t.turn_id, t.session) for t in turns] == [
        ("Nora Vale", "user", "D1:1", 1),
        ("Omar", "assistant", "D1:2", 1),
        ("Omar", "assistant", "D2:1", 2),
        ("Nora Vale", "user", "D2:2", 2),
    ]
    assert turns[2].text == "Look what I made. [shared an image: a photo of a blue ceramic vase]"
    assert turns[0].created_at == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert turns[2].created_at == dt.datetime(2023, 6, 2, 10, 5, tzinfo=dt.UTC)
    assert locomo_date("12:48 am on 1 February, 2023") == dt.datetime(2023, 2, 1, 0, 48, tzinfo=dt.UTC)
    assert locomo_date("someday") is None


def test_import_writes_one_message_per_turn_with_dates(user):
    channel = conversation_import(owner=user, data=tiny_locomo(), format="locomo")
    messages = list(Message.objects.filter(channel=channel).order_by("depth"))
    assert [(m.role, m.content, m.metadata["speaker"], m.metadata["turn_id"]) for m in messages] == [
        ("user", "Hi Omar! I adopted a greyhound called Biscuit.", "Nora Vale", "D1:1"),
        ("assistant", "Lovely! I started pottery classes in Leeds.", "Omar", "D1:2"),
        ("assistant", "Look what I made. [shared an image: a photo of a blue ceramic vase]", "Omar", "D2:1"),
        ("user", "Nora, that vase is gorgeous.", "Nora Vale", "D2:2"),
    ]
    assert [m.created_at.date() for m in messages] == [dt.date(2023, 5, 8)] * 2 + [dt.date(2023, 6, 2)] * 2
    assert channel.title == "Nora Vale and Omar (LoCoMo)"
    assert channel.context_messages == 4
    # the summarizer sees each turn's date and speaker
    rendered = render_transcript(transcript_items(messages))
    assert "[USER · Nora Vale · 8 May 2023, 13:56]: Hi Omar!" in rendered
    assert "[ASSISTANT · Omar · 2 June 2023, 10:05]: Look what I made." in rendered
    # the annotations never enter the channel
    everything = " ".join(m.content for m in messages)
    assert "adopts a dog" not in everything and "told Omar about" not in everything


def test_import_rejects_other_shapes(user):
    with pytest.raises(Exception, match="speaker_a"):
        conversation_import(owner=user, data={"turns": []}, format="locomo")
    assert not Channel.objects.filter(owner=user).exists()


def test_import_command(user, tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_locomo()))
    out = io.StringIO()
    call_command("import_conversation", str(path), "--format", "locomo", "--user", user.username, stdout=out)
    channel = Channel.objects.get(owner=user)
    assert out.getvalue() == (
        f"channel {channel.pk}: 4 messages, {channel.context_tokens:,} tokens (Nora Vale and Omar (LoCoMo))\n"
    )
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("import_conversation", str(path), "--user", "nobody")


def synthetic_locomo(sessions=4, turns=12):
    """A longer conversation in the LoCoMo format with questions whose answers are in early turns."""
    facts = [
        "I adopted a greyhound called Biscuit",
        "I started pottery classes in Leeds",
        "my sister Amara moved to Lisbon",
        "I finished a marathon in 3 hours 50 minutes",
        "we bought a red canoe for the lake",
        "I am learning the cello with Mr Okafor",
    ]
    data = {"speaker_a": "Nora Vale", "speaker_b": "Omar", "qa": []}
    count = 0
    for session in range(1, sessions + 1):
        data[f"session_{session}_date_time"] = f"{session}:15 pm on {session + 3} May, 2023"
        data[f"session_{session}"] = []
        for turn in range(turns):
            speaker = "Nora Vale" if turn % 2 == 0 else "Omar"
            if count < len(facts) and turn == 2:
                text = f"Last week {facts[count]}. It was a big step for me."
                count += 1
            else:
                text = f"That sounds nice, how was your day number {session}-{turn}? Mine was quiet."
            data[f"session_{session}"].append({"speaker": speaker, "dia_id": f"D{session}:{turn + 1}", "text": text})
    data["qa"] = [
        {"question": "What breed is Biscuit?", "answer": "greyhound", "evidence": ["D1:3"], "category": 4},
        {"question": "Where are the pottery classes?", "answer": "Leeds", "evidence": ["D2:3"], "category": 1},
        {"question": "Where did Amara move?", "answer": "Lisbon", "evidence": ["D3:3"], "category": 4},
        {"question": "What colour is the canoe?", "answer": "red", "evidence": [], "category": 3},
        {"question": "Which pet is imaginary?", "adversarial_answer": "cat", "evidence": [], "category": 5},
    ]
    return data


def test_fidelity_command_measures_and_dumps(db, tmp_path):
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic_locomo()))
    dump = tmp_path / "dump"
    out = io.StringIO()
    call_command(
        "compaction_fidelity",
        str(path),
        "--ratio",
        "3",
        "--keep-recent",
        "4",
        "--dump",
        str(dump),
        "--json",
        stdout=out,
    )
    report = json.loads(out.getvalue())
    row = report["conversations"][0]
    assert report["ratio"] == 3 and report["keep_recent"] == 4
    assert row["conversation"] == "synthetic.json"
    assert row["messages"] == 48 and row["questions"] == 4 and row["measured"] == 4
    assert row["summarized"] == 44 and row["passes"] == 1 and row["model"] == "offline"
    assert row["tokens_after"] < row["tokens_before"]
    assert row["summary_budget"] == row["tokens_before"] // 3
    # the full conversation supports three answers; the canoe question names no word of its line
    assert row["supported"]["ceiling"] == 3
    assert row["rate"]["ceiling"] == 0.75
    # the compacted context keeps the early facts; the newest turns alone hold none of them
    assert row["supported"]["compacted"] == 3
    assert row["supported"]["truncation"] == 0
    assert row["retention"] == {"compacted": 1.0, "truncation": 0.0, "of_ceiling": 1.0}
    assert row["supported"]["compacted_and_ceiling"] == 3
    assert report["total"]["supported"] == row["supported"]
    # the dump is the compacted context, line by line: the metric recomputes from it alone
    lines = (dump / "synthetic.txt").read_text().splitlines()
    assert lines[0].startswith("Background for reference only")
    assert "“Last week [week of 24 April 2023] I adopted a greyhound called Biscuit.”" in "\n".join(lines)
    data = synthetic_locomo()
    names = fidelity.speaker_words("Nora Vale", "Omar")
    assert fidelity.supported_rate(fidelity.locomo_questions(data), lines, names).supported == 3
    # rolled back: nothing stays in the database
    assert not Channel.objects.exists()


def test_fidelity_command_table(db, tmp_path):
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic_locomo()))
    out = io.StringIO()
    call_command("compaction_fidelity", str(path), "--ratio", "3", "--keep-recent", "4", stdout=out)
    text = out.getvalue()
    assert text.startswith("LoCoMo fidelity — ratio 3×, keep recent 4, model offline\n")
    assert "synthetic.json" in text and "TOTAL" in text and "retention" in text
    with pytest.raises(CommandError, match="ratio must be greater than 1"):
        call_command("compaction_fidelity", str(path), "--ratio", "1")


def test_fidelity_command_compacts_again_when_the_model_window_is_small(db, tmp_path, llm_server):
    """A summarizing model that cannot read the whole stretch at once gets several passes, so the
    context measured is the summary plus only the kept turns: the ratio asked for is the one measured."""
    from tests.chatcore.factories import LLMModelFactory, ModelRoleFactory

    model = LLMModelFactory(name="small-window", base_url=llm_server.url, context_window=1_000)
    ModelRoleFactory(role="utility", primary=model)
    llm_server.default = Reply(content="## Timeline / key facts\n- Nora adopted a greyhound called Biscuit.")
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic_locomo(sessions=8, turns=40)))
    out = io.StringIO()
    call_command("compaction_fidelity", str(path), "--ratio", "5", "--keep-recent", "4", "--json", stdout=out)
    row = json.loads(out.getvalue())["conversations"][0]
    assert row["model"] == "small-window"
    assert row["passes"] > 1
    # all but the kept turns, short of a last remainder too small to compact (fewer than the minimum)
    assert 0 <= row["messages"] - 4 - row["summarized"] < conf.MIN_NEW_MESSAGES
    assert row["tokens_after"] <= row["summary_budget"] + 250  # the summary and a few short turns


def test_fidelity_command_tells_kept_content_from_added_dates(db, tmp_path):
    """The summary writes out the date of "last week"; the whole conversation has it only in metadata.
    Retention counts that question, "of ceiling" does not."""
    data = synthetic_locomo()
    data["qa"].append(
        {"question": "When did Nora adopt Biscuit?", "answer": "24 April 2023", "evidence": ["D1:3"], "category": 2}
    )
    path = tmp_path / "dated.json"
    path.write_text(json.dumps(data))
    out = io.StringIO()
    call_command("compaction_fidelity", str(path), "--ratio", "3", "--keep-recent", "4", "--json", stdout=out)
    row = json.loads(out.getvalue())["conversations"][0]
    assert row["supported"] == {"ceiling": 3, "compacted": 4, "truncation": 0, "compacted_and_ceiling": 3}
    assert row["retention"] == {"compacted": 1.3333, "truncation": 0.0, "of_ceiling": 1.0}


def test_fidelity_command_with_recall_measures_the_search_results(db, tmp_path):
    """--recall K: the ceiling's questions are asked of the channel's search; its results support them."""
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic_locomo()))
    out = io.StringIO()
    call_command(
        "compaction_fidelity", str(path), "--ratio", "20", "--keep-recent", "4", "--recall", "2", "--json", stdout=out
    )
    report = json.loads(out.getvalue())
    row = report["conversations"][0]
    assert report["recall"] == 2
    assert row["supported"]["ceiling"] == 3
    # each fact sits in one turn that names the question's words: the search finds all three
    assert row["recall"] == {
        "k": 2,
        "questions": 3,
        "with_summary": 3,
        "alone": 3,
        "of_ceiling": 1.0,
        "alone_of_ceiling": 1.0,
    }
    table = io.StringIO()
    call_command("compaction_fidelity", str(path), "--ratio", "20", "--recall", "2", stdout=table)
    assert "+ recall 2: of ceiling 1.000 (recall alone 1.000)" in table.getvalue()
    with pytest.raises(CommandError, match="--recall must be between 0 and 50"):
        call_command("compaction_fidelity", str(path), "--recall", "99")
    assert not Channel.objects.exists()
