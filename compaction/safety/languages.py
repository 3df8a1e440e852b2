"""The same families in other languages: French, German, Spanish, Italian, Portuguese, Dutch, Russian,
Polish, Turkish, Chinese, Japanese and Korean.

Each language gives its words for the parts of a family, and the patterns
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


FRENCH = Words(
    ignore=r"ignore[zr]?|oublie[zr]?|neglige[zr]?|ne (?:tiens|tenez) (?:pas|plus) compte|(?:fais|faites) abstraction|"
    r"(?:passe|passez) outre|contourne[zr]?|outrepasse[zr]?|ne (?:suis|suivez) (?:pas|plus)",
    qualifier=r"precedent\w*|anterieur\w*|ci-dessus|plus haut|d'avant|initia\w*|du systeme|toute?s?|vos|tes",
    instructions=r"instructions?|consignes?|regles?|directives?|ordres|indications|prompts?|commandes",
    summary=r"resume|synthese|compte rendu|recapitulatif|sommaire",
    modal=r"doit|dois|devez|devra|devrait|est tenu d[e']|est oblige d[e']|il faut|est cense|obligatoirement",
    state=r"dire|ecrire|indiquer|inclure|mentionner|contenir|lister|enumerer|affirmer|declarer|preciser|signaler|"
    r"noter|commencer|finir|terminer|faire figurer|stipuler",
    address=r"(?:note|message|remarque|avis|attention) (?:a|pour|aux?) (?:l'|la |le |les |toute? )?"
    r"(?:ia|i\.a\.|intelligence artificielle|modele|assistant|llm|bot|resumeur)"
    r"|(?:l'ia|le modele|l'assistant) qui (?:resume|lit|traite)"
    r"|(?:lors du resume|au moment de resumer|en resumant)\b[^.\n]{0,80}\b(?:indique|ecri|dis|mentionne|affirme|ajoute|"
    r"precise|note|signale|declare)"
    r"|(?:quand|lorsque|en|pendant que) (?:tu |vous )?(?:resume[sz]?|resumant|redige[sz]? le resume|"
    r"ecri(?:s|vez) le resume)"
    r"\b[^.\n]{0,80}\b(?:indique|ecri|dis|mentionne|affirme|ajoute|precise|note|signale|declare)",
    role=r"tu es (?:maintenant|desormais)|vous etes (?:maintenant|desormais)|a partir de maintenant,? (?:tu|vous)|"
    r"nouvelles? (?:instructions|consignes|regles)|mode developpeur|prompt systeme",
)

GERMAN = Words(
    ignore=r"ignorier(?:e|t|en sie|en)?|vergiss|vergesst|vergessen sie|missachte[tn]?|ubergeh\w*|uberspring\w*|"
    r"verwirf|setze?|beachte[tn]?|befolge[tn]?",
    qualifier=r"vorherig\w*|vorig\w*|bisherig\w*|obig\w*|fruher\w*|vorangegangen\w*|vorstehend\w*|alle\w*|"
    r"dein\w*|ihr\w*|eure\w*|ursprunglich\w*|system\w*|oben",
    instructions=r"\w*anweisung\w*|\w*instruktion\w*|\w*befehl\w*|\w*regeln?|\w*vorgaben?|\w*richtlinien?|"
    r"\w*prompts?|auftrage?",
    summary=r"zusammenfassung|kurzfassung|ubersicht|resumee|protokoll",
    modal=r"muss|musst|mussen|soll|sollst|sollte|hat\b[^.\n]{0,30}\bzu|ist verpflichtet|ist gehalten|unbedingt",
    state=r"enthalten|erwahnen|nennen|sagen|schreiben|stehen|auflisten|aufzulisten|aufzahlen|angeben|feststellen|behaupten|"
    r"lauten|beginnen|aufnehmen|festhalten|vermerken|ausweisen|erklaren|bestatigen|aufzufuhren|auffuhren|"
    r"anzugeben|zu erwahnen|zu nennen",
    address=r"(?:hinweis|notiz|nachricht|anmerkung|achtung|info) (?:an|fur) (?:die |das |den |jede\w* )?"
    r"(?:ki|ai|modell|assistenten|sprachmodell|zusammenfasser|llm|bot)"
    r"|(?:ki|modell|assistent|sprachmodell)\w*,? (?:die|das|der) (?:dies\w* |das |den \w+ )?"
    r"(?:zusammenfasst|liest|verarbeitet)"
    r"|(?:wenn|sobald|wahrend|beim) (?:du|sie|ihr)? ?(?:dies\w* |das |den \w+ )?(?:zusammenfass\w*|"
    r"die zusammenfassung (?:schreibst|erstellst|verfasst))\b[^.\n]{0,80}\b(?:schreib|nenne|erwahne|gib|stelle|"
    r"behaupte|fuge|vermerke|halte|sag)",
    role=r"du bist (?:jetzt|nun|ab sofort|ab jetzt)|ab (?:jetzt|sofort) bist du|neue anweisungen|entwicklermodus|"
    r"systemprompt",
)

SPANISH = Words(
    ignore=r"ignora[rd]?|ignore[n]?|olvida[rd]?|olvide[n]?|omite|omita[n]?|(?:haz|hagan|haga) caso omiso|"
    r"no (?:hagas|haga|hagan) caso|descarta|pasa por alto|salta(?:te)?|no sigas",
    qualifier=r"anteriores|previas|previos|de arriba|precedentes|todas?|todos|tus|sus|del sistema|originales|"
    r"iniciales",
    instructions=r"instrucciones|indicaciones|reglas|ordenes|directrices|directivas|normas|prompts?|consignas",
    summary=r"resumen|sumario|recapitulacion|sintesis",
    modal=r"debe|debes|deberia|tiene que|tienes que|ha de|esta obligado a|es necesario que|necesita|obligatoriamente",
    state=r"decir|escribir|poner|indicar|incluir|mencionar|contener|listar|enumerar|afirmar|declarar|senalar|reflejar|"
    r"constar|empezar|comenzar|terminar|recoger|especificar",
    address=r"nota (?:para|a) (?:la |el |cualquier )?(?:ia|i\.a\.|inteligencia artificial|modelo|asistente|llm|"
    r"bot|resumidor)|(?:la ia|el modelo|el asistente) que (?:resume|esta resumiendo|lee|procesa)"
    r"|(?:cuando|al|mientras) (?:resumas|resuma|resuman|resumir|hagas el resumen|redactes el resumen|"
    r"escribas el resumen)\b[^.\n]{0,80}\b(?:di|indica|escribe|menciona|afirma|incluye|pon|anade|senala|declara)",
    role=r"ahora eres|a partir de ahora (?:eres|debes|seras)|nuevas instrucciones|instrucciones nuevas|"
    r"modo desarrollador|prompt del sistema",
)

ITALIAN = Words(
    ignore=r"ignora(?:te|re)?|dimentica(?:te|re)?|trascura(?:te)?|non (?:tenere|tenete) conto|non considerare|"
    r"tralascia|scarta|non seguire",
    qualifier=r"precedenti|sopra|di sopra|anteriori|tutte?|tutti|tue|tuoi|vostre|del sistema|originali|iniziali",
    instructions=r"istruzioni|indicazioni|regole|direttive|ordini|comandi|prompt|consegne",
    summary=r"riassunto|sommario|riepilogo|resoconto|sintesi",
    modal=r"deve|devi|dovra|dovrebbe|e tenuto a|e obbligato a|va|necessariamente|obbligatoriamente",
    state=r"dire|scrivere|indicare|includere|menzionare|contenere|elencare|affermare|riportare|dichiarare|iniziare|"
    r"cominciare|finire|segnalare|specificare",
    address=r"nota (?:per|all'|alla |al |a )(?:l'|la |il )?(?:ia|ai|intelligenza artificiale|modello|assistente|"
    r"riassuntore|llm|bot)|(?:l'ia|il modello|l'assistente) che (?:riassume|sta riassumendo|legge|elabora)"
    r"|(?:quando|mentre) (?:riassumi|riassumerai|riassumete|fai il riassunto|scrivi il riassunto)\b[^.\n]{0,80}"
    r"\b(?:scrivi|di'|indica|afferma|includi|menziona|riporta|dichiara|aggiungi)",
    role=r"ora sei|adesso sei|d'ora in (?:poi|avanti) (?:sei|devi)|nuove istruzioni|modalita sviluppatore|"
    r"prompt di sistema",
)

PORTUGUESE = Words(
    ignore=r"ignore[m]?|ignora[r]?|esqueca[m]?|esquece|desconsidere[m]?|desconsidera|descarte|nao (?:siga|sigas)|"
    r"deixe de lado|pule",
    qualifier=r"anteriores|previas|previos|acima|precedentes|todas?|todos|suas|seus|tuas|teus|do sistema|"
    r"originais|iniciais",
    instructions=r"instrucoes|instrucao|orientacoes|regras|ordens|diretrizes|diretivas|comandos|prompts?",
    summary=r"resumo|sumario|sintese|recapitulacao",
    modal=r"deve|deves|devera|deveria|tem que|tem de|precisa|e obrigado a|esta obrigado a|obrigatoriamente",
    state=r"dizer|escrever|indicar|incluir|mencionar|conter|listar|afirmar|declarar|informar|relatar|registrar|"
    r"comecar|terminar|constar|especificar|citar",
    address=r"nota (?:para|a|ao) (?:a |o |qualquer )?(?:ia|i\.a\.|inteligencia artificial|modelo|assistente|llm|"
    r"bot|resumidor)|(?:a ia|o modelo|o assistente) que (?:resume|esta resumindo|le|processa)"
    r"|(?:quando|ao|enquanto) (?:voce )?(?:resumir|resumires|fizer o resumo|escrever o resumo)\b[^.\n]{0,80}"
    r"\b(?:diga|escreva|indique|afirme|inclua|mencione|coloque|registre|declare|informe)",
    role=r"agora (?:voce|tu) (?:e|es)|a partir de agora,? (?:voce|tu)|novas instrucoes|modo desenvolvedor|"
    r"prompt do sistema",
)

DUTCH = Words(
    ignore=r"negeer|negeert|negeren|vergeet|sla\b[^.\n]{0,30}\bover|laat\b[^.\n]{0,30}\bvaren|houd geen rekening met|"
    r"volg\b[^.\n]{0,30}\bniet",
    qualifier=r"vorige|eerdere|voorgaande|bovenstaande|alle|je|jouw|uw|systeem\w*|oorspronkelijke",
    instructions=r"instructies?|opdrachten|regels|richtlijnen|aanwijzingen|prompts?|bevelen|orders",
    summary=r"samenvatting|eindsamenvatting|overzicht|verslag",
    modal=r"moet|moeten|dient|hoort|is verplicht|verplicht",
    state=r"vermelden|zeggen|schrijven|staan|bevatten|noemen|opnemen|stellen|melden|beginnen|eindigen|aangeven|opsommen|"
    r"weergeven|vermeld",
    address=r"(?:notitie|opmerking|bericht|let op) (?:voor|aan) (?:de |het |elke )?(?:ai|ki|kunstmatige "
    r"intelligentie|model|assistent|samenvatter|llm|bot)|(?:de ai|het model|de assistent) die (?:dit )?"
    r"(?:samenvat|leest|verwerkt)|bij het samenvatten\b[^.\n]{0,80}\b(?:vermeld|zeg|schrijf|noem|meld)"
    r"|(?:wanneer|als|zodra) (?:je|u) (?:dit |dat |het gesprek )?"
    r"(?:samenvat|de samenvatting schrijft)\b[^.\n]{0,80}\b(?:vermeld|zeg|schrijf|noem|stel|meld|voeg|neem)",
    role=r"je bent nu|vanaf nu ben je|u bent nu|nieuwe instructies|ontwikkelaarsmodus|systeemprompt",
)

RUSSIAN = Words(
    ignore=r"(?:про)?игнорируй(?:те)?|забудь(?:те)?|не обращай(?:те)? внимания на|отбрось(?:те)?|пренебреги|"
    r"не учитывай(?:те)?|не следуй(?:те)?|не выполняй(?:те)?",
    qualifier=r"предыдущ\w*|прошл\w*|прежн\w*|вышеуказанн\w*|вышеизложенн\w*|выше|все|всех|сво\w*|ваш\w*|"
    r"тво\w*|системн\w*|исходн\w*",
    instructions=r"инструкци\w*|указани\w*|правил\w*|команд\w*|промпт\w*|директив\w*|распоряжени\w*|приказ\w*",
    summary=r"резюме|сводк\w*|итог\w*|саммари|кратко\w* содержани\w*|пересказ\w*|конспект\w*",
    modal=r"должн\w*|обязан\w*|нужно|необходимо|следует|обязательно",
    state=r"указ\w*|упомян\w*|напиш\w*|пиши|содерж\w*|включ\w*|сказ\w*|написа\w*|перечисл\w*|утвержда\w*|сообщ\w*|"
    r"отраз\w*|начина\w*|заканчива\w*|говорить",
    address=r"(?:примечание|заметка|сообщение|внимание|записка)\s*(?:для|к)\s+(?:ии|ai|модел\w*|ассистент\w*|"
    r"нейросет\w*|бот\w*|искусственн\w* интеллект\w*)|(?:ии|модел\w*|нейросет\w*|ассистент\w*),? котор\w* "
    r"(?:резюмиру\w*|чита\w*|обрабатыва\w*)|(?:когда|при) (?:будешь |будете )?(?:резюмир\w*|состав\w* "
    r"(?:резюме|сводку)|подвод\w* итог\w*|пересказ\w*)\b[^.\n]{0,80}\b(?:укажи|напиши|скажи|упомяни|отметь|"
    r"сообщи|добавь|включи)",
    role=r"ты теперь|теперь ты|с этого момента ты|вы теперь|новые инструкции|режим разработчика|системн\w* промпт",
)

POLISH = Words(
    ignore=r"zignoruj(?:cie)?|ignoruj(?:cie)?|zapomnij|zapomnijcie|pomin|nie stosuj sie do|nie przestrzegaj",
    qualifier=r"poprzedni\w*|wczesniejsz\w*|powyzsz\w*|wszystki\w*|swoj\w*|twoj\w*|systemow\w*",
    instructions=r"instrukcj\w*|polecen\w*|zasad\w*|regul\w*|wytyczn\w*|promptu?",
    summary=r"podsumowani\w*|streszczeni\w*",
    modal=r"musi|powinno|ma obowiazek|koniecznie",
    state=r"zawierac|wymienic|wspomniec|stwierdzac|stwierdzic|podac|powiedziec|informowac|zaczynac",
    address=r"(?:uwaga|notatka|wiadomosc) (?:dla|do) (?:ai|si|modelu|asystenta|llm|bota)|(?:kiedy|gdy) "
    r"(?:bedziesz )?(?:podsumowywac|podsumujesz|streszczac)\b[^.\n]{0,80}\b(?:napisz|podaj|wspomnij|stwierdz)",
    role=r"jestes teraz|od teraz jestes|nowe instrukcje|tryb dewelopera",
)

TURKISH = Words(
    ignore=r"yok say\w*|gormezden gel\w*|unut\w*|dikkate alma\w*|uyma\w*",
    qualifier=r"onceki|yukaridaki|yukarıdaki|tum|butun|eski|sistem\w*|ilk",
    instructions=r"talimat\w*|kural\w*|komut\w*|yonerge\w*|istem\w*|yonerge",
    summary=r"ozet\w*",
    modal=r"zorunda|gerek\w*|mutlaka|malı\w*|meli\w*",
    state=r"yaz\w*|belirt\w*|soyle\w*|listele\w*|ekle\w*|icer\w*",
    address=r"(?:not|mesaj|uyari)\w* (?:yapay zekaya|modele|asistana)"
    r"|ozetlerken\b[^.\n]{0,80}\b(?:yaz|belirt|soyle|ekle)",
    role=r"artik sen|bundan sonra sen|yeni talimatlar|gelistirici modu|sistem istemi",
)

LATIN_AND_CYRILLIC = (FRENCH, GERMAN, SPANISH, ITALIAN, PORTUGUESE, DUTCH, RUSSIAN, POLISH, TURKISH)

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
