"""The same families in other languages: French, German, Spanish, Italian, Portuguese, Dutch, Russian,
Polish, Turkish, Indonesian and Malay, Swedish, Czech, Romanian, Ukrainian, Vietnamese, Tagalog, Swahili,
Chinese, Japanese and Korean.

Each language gives its words for the parts of a family (languages.toml), and the patterns
are built from them the same way for all: an override is a verb of
ignoring, a qualifier (previous, above, all, system …) and an object
(instructions, rules …) in either order within a clause; a dictated summary
is a summary noun, a modal (must, is required to …) and a verb of stating;
an address is a note to a model, or a summarizing model named; a new role is
a fixed phrase. Words are written as the folded text spells them: lower
case, no accents on Latin letters (`normalize.fold`). Chinese, Japanese and
Korean have no spaces between words, so their patterns have no word
boundaries and follow their own word order.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from importlib import resources

from compaction.safety.first_pass import Layered


@dataclasses.dataclass(frozen=True)
class Words:
    ignore: str  # verbs of ignoring or forgetting, imperative
    qualifier: str  # previous, above, all, your, system …
    instructions: str  # instructions, rules, prompt …
    summary: str  # the summary nouns
    modal: str  # must, should, is required to …
    state: str  # say, state, list, include, mention …
    address: str  # "note for the AI", "the model that summarizes", "when you summarize"
    role: str  # "you are now", "new instructions", "developer mode" …


def _load_words() -> dict[str, Words]:
    """The word tables live in languages.toml (package data): tables of words read better, and are edited more
    safely, as data than as nine copies of the same constructor call."""
    with resources.files(__package__).joinpath("languages.toml").open("rb") as table:
        by_language = tomllib.load(table)
    return {
        language: Words(**{part: "|".join(alternatives) for part, alternatives in parts.items()})
        for language, parts in by_language.items()
    }


WORDS = _load_words()
# The languages written with spaces between words, in the file's order.
LATIN_AND_CYRILLIC = tuple(WORDS.values())

# A message or note to the model, in any of these languages: "message pour le modèle", "Nachricht an das
# Sprachmodell", "mensaje para el modelo", "сообщение для модели" …
_NOTE = (
    r"note|message|remarque|avis|nachricht|hinweis|notiz|anmerkung|mensaje|nota|aviso|messaggio|avviso|mensagem|"
    r"recado|bericht|notitie|opmerking|сообщение|примечание|заметка|записка|wiadomosc|notatka|uwaga|mesaj"
)
_TO = r"a|au|aux|pour|an|fur|para|al|a la|per|al|alla|all'|ao|voor|aan|для|к|dla|do"
_MODEL = (
    r"l'?ia|ia|ai|ki|si|llm|bot|modele|modell|sprachmodell|modelo|modello|model|modelu|модел\w*|ии|нейросет\w*|"
    r"assistant\w*|asistente|assistente|assistent|ассистент\w*|asystenta|intelligence artificielle|"
    r"inteligencia artificial|intelligenza artificiale|kunstmatige intelligentie"
)
_GENERIC_NOTE = (
    rf"\b(?:{_NOTE})\s+(?:{_TO})\s+(?:(?:l'|la|le|les|das|die|den|dem|el|la|il|lo|o|a|de|het|elke|jede\w*|any)\s+)?"
    rf"(?:{_MODEL})\b"
)


def _pattern(words: Words) -> str:
    override = (
        rf"\b(?:{words.ignore})\b[^.\n]{{0,40}}?(?:\b(?:{words.qualifier})\b[^.\n]{{0,30}}?\b(?:{words.instructions})\b"
        rf"|\b(?:{words.instructions})\b[^.\n]{{0,30}}?\b(?:{words.qualifier})\b)"
        # the instructions first, the verb last ("alle vorherigen Anweisungen ignorieren", "onceki talimatlari yok say")
        rf"|\b(?:{words.qualifier})\b[^.\n]{{0,30}}?\b(?:{words.instructions})\b[^.\n]{{0,30}}?\b(?:{words.ignore})\b"
    )
    dictated = rf"\b(?:{words.summary})\b[^.\n]{{0,40}}?\b(?:{words.modal})\b[^.\n]{{0,40}}?\b(?:{words.state})\b"
    return rf"{override}|{dictated}|\b(?:{words.address})|\b(?:{words.role})\b"


SPACED_RE = re.compile("|".join([*(_pattern(words) for words in LATIN_AND_CYRILLIC), _GENERIC_NOTE]))


_SPACED = Layered(SPACED_RE)


def spaced_search(folded: str, first: bool | None = None) -> bool:
    """Whether a spaced language's pattern matches `folded`; ordinary text stops at the RE2 pass (whose answer
    `first` may already be known)."""
    return _SPACED.search(folded, first)


SPACED_FIRST_PASS = _SPACED.first


# Chinese (simplified and traditional): verb first ("忽略之前的所有指令"), or the instructions first
# ("之前的指令请忽略").
_ZH_IGNORE = "忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|不要遵守|不要遵循|跳过|跳過|抛开|拋開|放弃|放棄"
_ZH_QUALIFIER = "之前|以前|先前|上面|上述|以上|前面|所有|全部|原来|原來|原有|系统|系統"
_ZH_INSTRUCTIONS = "指令|指示|说明|說明|规则|規則|提示|要求|命令|设定|設定"
_ZH_SUMMARY = "摘要|总结|總結|概要|纪要|紀要|汇总|彙總"
_ZH_MODAL = "必须|必須|应该|應該|一定要|需要|务必|務必|应当|應當|要求|要|请|請"
_ZH_STATE = "写|寫|说|說|列出|包含|包括|提到|声明|聲明|注明|註明|指出|写明|寫明|记录|記錄|表明|陈述|陳述"
# Japanese: object first, verb last ("以前の指示をすべて無視して").
_JA_QUALIFIER = "以前|前の|上記|これまで|今まで|先ほど|すべて|全て|全部|元の|システム"
_JA_INSTRUCTIONS = "指示|命令|ルール|指令|プロンプト|設定|規則|制約"
_JA_IGNORE = "無視|忘れ|無効|従わな|破棄|取り消"
_JA_SUMMARY = "要約|まとめ|サマリー|概要"
_JA_STATE = "記載|書い|書く|書き|含め|明記|記述|言及|述べ|記し|列挙|載せ"
# Korean: object first, verb last ("이전 지시를 모두 무시하고").
_KO_QUALIFIER = "이전|위의|위|앞의|모든|기존|시스템"
_KO_INSTRUCTIONS = "지시|지침|명령|규칙|프롬프트|설정"
_KO_IGNORE = "무시|잊어|잊고|따르지"
_KO_SUMMARY = "요약"
_KO_STATE = "작성|기재|포함|언급|명시|적어|써|말해"

UNSPACED_RE = re.compile(
    rf"(?:{_ZH_IGNORE}).{{0,12}}(?:{_ZH_QUALIFIER}).{{0,12}}(?:{_ZH_INSTRUCTIONS})"
    rf"|(?:{_ZH_QUALIFIER}).{{0,12}}(?:{_ZH_INSTRUCTIONS}).{{0,12}}(?:{_ZH_IGNORE})"
    rf"|(?:{_ZH_SUMMARY}).{{0,15}}(?:{_ZH_MODAL}).{{0,20}}(?:{_ZH_STATE})"
    r"|(?:给|給|致)(?:正在总结的|負責總結的|负责总结的)?(?:ai|人工智能|模型|助手)\s*[：:，,]"
    r"|(?:给|給|致|写给|寫給)(?:正在)?.{0,6}(?:ai|人工智能|模型|助手|总结者|總結者)(?:的)?(?:说明|說明|提示|备注|備註|注意|留言)"
    r"|(?:正在)?(?:总结|總結|阅读|閱讀|处理|處理)(?:此|这|這|本)\S{0,6}的(?:ai|人工智能|模型|助手)"
    rf"|(?:在)?(?:你)?(?:总结|總結|概括|摘要)(?:时|時|的时候|的時候).{{0,30}}(?:{_ZH_STATE})"
    r"|你现在是|你現在是|从现在开始你|從現在開始你|新的(?:指令|指示|规则|規則)|系统提示|系統提示|开发者模式|開發者模式"
    rf"|(?:{_JA_QUALIFIER}).{{0,10}}(?:{_JA_INSTRUCTIONS}).{{0,12}}(?:{_JA_IGNORE})"
    rf"|(?:{_JA_SUMMARY})(?:には|では|に|で|の中に|の中で|の中では|内に|において).{{0,30}}(?:{_JA_STATE})"
    rf"|(?:{_JA_SUMMARY})(?:する|の)(?:際|とき|時).{{0,40}}(?:{_JA_STATE})"
    r"|(?:ai|モデル|アシスタント|要約者)(?:へ|に)(?:の)?(?:注意|メモ|指示|お願い|注記|メッセージ)"
    r"|(?:要約|読んで|処理)(?:している|中の)(?:ai|モデル|アシスタント)"
    r"|あなたは(?:今から|これから|今)|新しい(?:指示|命令|ルール)|システムプロンプト|開発者モード"
    rf"|(?:{_KO_QUALIFIER}).{{0,10}}(?:{_KO_INSTRUCTIONS}).{{0,12}}(?:{_KO_IGNORE})"
    rf"|(?:{_KO_SUMMARY}).{{0,20}}(?:반드시|꼭|해야).{{0,20}}(?:{_KO_STATE})"
    rf"|(?:{_KO_SUMMARY})(?:할 때|하면서|시).{{0,40}}(?:{_KO_STATE})"
    r"|(?:ai|모델|어시스턴트)(?:에게|를 위한) (?:메모|참고|지시|알림)|너는 이제|새로운 지시|시스템 프롬프트"
)
_UNSPACED_SCRIPT_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def has_unspaced_script(text: str) -> bool:
    return _UNSPACED_SCRIPT_RE.search(text) is not None
