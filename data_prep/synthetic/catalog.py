"""The condition catalog of the synthetic cohort: ED diagnoses, their ICD codes and their evidence.

Each condition carries one real ICD-9-CM and one real ICD-10-CM code with the official long title
(what `hosp/d_icd_diagnoses` holds) and an abbreviated short title (upper-case for ICD-9, as
`ed/diagnosis` writes it). ICD titles are public-domain CMS/CDC text. The ICD-9 abbreviations are
the CMS short titles except where CMS writes NOS/NEC: there, as MIMIC-IV-ED often does (e.g.
"PNEUMONIA,ORGANISM UNSPECIFIED"), a spelled-out variant, so that the paper's NOS/NEC filter drops
only the labels meant to be dropped (acute appendicitis keeps its real "ACUTE APPENDICITIS NOS"). Evidence templates are
ordinary clinical wording written for this project (no MIMIC-derived text):

- direct (admission-time) findings make a label *supported*: abnormal labs, ECG machine statements,
  radiology findings/impressions, echo findings, vital-sign abnormalities;
- indirect traces make it *partial*: home medications, an earlier discharge's diagnosis list or an
  earlier ED stay's diagnosis;
- findings charted only after t0 (later labs, imaging, echo, cultures) leave it *unsupported*.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rad:
    """One radiology exam template: exam name, FINDINGS sentence, implicit IMPRESSION sentence."""

    exam: str
    findings: str
    impression: str


@dataclass(frozen=True)
class Echo:
    """Echo study template (project echo table columns)."""

    lvef: tuple[int, int]
    wall_motion: str
    rv_function: str
    valves: str
    effusion: str
    finding: str


@dataclass(frozen=True)
class Condition:
    """One ED diagnosis with its codes, complaints and evidence templates.

    Attributes:
        key: identifier used in the ground-truth sidecar.
        name: lay name (discharge-summary diagnosis lists, prior history).
        icd9, icd9_title, icd9_short: ICD-9-CM code, long title, upper-case short title.
        icd10, icd10_title, icd10_short: ICD-10-CM code, long title, short title.
        weight: relative frequency among admitted ED stays.
        complaints: triage chief complaints the condition produces.
        labs: (lab key, low, high) abnormal value ranges at admission.
        ecg: machine statements.
        rad: radiology templates.
        echo: echo template or None.
        vitals: vital-sign abnormality keys (see `VITAL_ABNORMALITIES`); only where the vital sign
            itself substantiates the diagnosis (fever + hypotension in sepsis, BP 220/130, an AF
            rhythm), not for non-specific tachycardia.
        meds: home medications (names in `MEDICATIONS`) that hint at the condition.
        micro: (specimen, test, organism) of a culture resulted after admission, or None.
        critical: the time-critical group (paper's six) or None.
        ed_weight: relative frequency as a diagnosis of non-admitted ED stays (0 = never).
        signs: suggestive but non-specific vital signs (fever in influenza, tachycardia in a GI
            bleed): a *partial* trace (DESIGN: "suggestive sign"), never support.
    """

    key: str
    name: str
    icd9: str
    icd9_title: str
    icd9_short: str
    icd10: str
    icd10_title: str
    icd10_short: str
    weight: float
    complaints: tuple[str, ...]
    labs: tuple[tuple[str, float, float], ...] = ()
    ecg: tuple[str, ...] = ()
    rad: tuple[Rad, ...] = ()
    echo: Echo | None = None
    vitals: tuple[str, ...] = ()
    meds: tuple[str, ...] = ()
    micro: tuple[str, str, str] | None = None
    critical: str | None = None
    ed_weight: float = 0.0
    signs: tuple[str, ...] = ()


CRITICAL_GROUPS = (
    "myocardial_infarction",
    "sepsis",
    "intracranial_hemorrhage",
    "pulmonary_embolism",
    "stroke",
    "gi_bleeding",
)

_CTA = "CTA CHEST"
_CXR = "CHEST (PA AND LAT)"
_CTH = "CT HEAD W/O CONTRAST"
_CTAP = "CT ABD & PELVIS WITH CONTRAST"
_US_RUQ = "LIVER OR GALLBLADDER US (SINGLE ORGAN)"
_MRI = "MR HEAD W & W/O CONTRAST"
_LENI = "UNILAT LOWER EXT VEINS"

CONDITIONS: tuple[Condition, ...] = (
    Condition(
        "stemi",
        "ST elevation myocardial infarction",
        "41091",
        "Acute myocardial infarction of unspecified site, initial episode of care",
        "AMI UNSPEC SITE, INITIAL",
        "I213",
        "ST elevation (STEMI) myocardial infarction of unspecified site",
        "ST elevation (STEMI) myocardial infarction of unsp site",
        2.0,
        ("Chest pain", "CHEST PAIN", "STEMI", "Chest pressure, Diaphoresis"),
        labs=(("trop", 0.2, 6.0), ("ck", 400, 3000)),
        ecg=(
            "ST elevation, consider anterior injury or acute infarct",
            "Inferior ST elevation, consistent with acute injury",
            "Anterolateral ST elevation with reciprocal inferior depression",
        ),
        echo=Echo(
            (25, 40),
            "Regional: anterior and apical akinesis",
            "Normal",
            "Mild MR",
            "None",
            "Akinesis of the anterior wall and apex with moderately depressed LV systolic function",
        ),
        meds=("aspirin", "atorvastatin", "nitroglycerin"),
        critical="myocardial_infarction",
    ),
    Condition(
        "nstemi",
        "NSTEMI",
        "41071",
        "Subendocardial infarction, initial episode of care",
        "SUBENDO INFARCT, INITIAL",
        "I214",
        "Non-ST elevation (NSTEMI) myocardial infarction",
        "Non-ST elevation (NSTEMI) myocardial infarction",
        4.0,
        ("Chest pain", "CHEST PAIN", "Chest pain, Dyspnea", "Epigastric pain", "Abnormal labs"),
        labs=(("trop", 0.05, 2.5),),
        ecg=(
            "Lateral ST-T changes may be due to myocardial ischemia",
            "Diffuse ST depression, consider subendocardial injury",
            "T wave inversions in anterior leads, consider ischemia",
        ),
        echo=Echo(
            (35, 50),
            "Regional: inferior hypokinesis",
            "Normal",
            "Mild MR",
            "None",
            "Hypokinesis of the basal inferior wall with mildly depressed LV systolic function",
        ),
        meds=("aspirin", "atorvastatin", "metoprolol succinate", "clopidogrel"),
        critical="myocardial_infarction",
    ),
    Condition(
        "unstable_angina",
        "unstable angina",
        "4111",
        "Intermediate coronary syndrome",
        "INTERMED CORONARY SYND",
        "I200",
        "Unstable angina",
        "Unstable angina",
        1.5,
        ("Chest pain", "CHEST PAIN", "Chest pressure"),
        ecg=("Nonspecific ST-T abnormality", "Anterior T wave inversions, consider ischemia"),
        meds=("aspirin", "isosorbide mononitrate", "nitroglycerin"),
        ed_weight=0.5,
    ),
    Condition(
        "sepsis",
        "sepsis",
        "99591",
        "Sepsis",
        "SEPSIS",
        "A419",
        "Sepsis, unspecified organism",
        "Sepsis, unspecified organism",
        5.0,
        ("Fever", "FEVER", "Hypotension", "Altered mental status", "Fever, Weakness", "Lethargy"),
        labs=(("lactate", 2.6, 8.5), ("wbc", 15.0, 32.0)),
        rad=(
            Rad(
                _CXR,
                "Patchy opacity at the right lung base.",
                "Right basilar opacity, concerning for infection.",
            ),
        ),
        vitals=("fever", "tachycardia", "hypotension"),
        micro=("BLOOD CULTURE", "Blood Culture, Routine", "ESCHERICHIA COLI"),
        critical="sepsis",
    ),
    Condition(
        "intracerebral_hemorrhage",
        "intracerebral hemorrhage",
        "431",
        "Intracerebral hemorrhage",
        "INTRACEREBRAL HEMORRHAGE",
        "I619",
        "Nontraumatic intracerebral hemorrhage, unspecified",
        "Nontraumatic intracerebral hemorrhage, unspecified",
        1.5,
        ("HEAD BLEED", "Headache", "Left sided weakness", "Aphasia", "Unresponsive"),
        rad=(
            Rad(
                _CTH,
                "Acute intraparenchymal hyperdensity in the right basal ganglia measuring 3.1 cm with "
                "surrounding edema and 4 mm leftward midline shift.",
                "Acute right basal ganglia intraparenchymal hematoma with mass effect.",
            ),
        ),
        meds=("warfarin", "apixaban"),
        critical="intracranial_hemorrhage",
        signs=("hypertension",),
    ),
    Condition(
        "subarachnoid_hemorrhage",
        "subarachnoid hemorrhage",
        "430",
        "Subarachnoid hemorrhage",
        "SUBARACHNOID HEMORRHAGE",
        "I609",
        "Nontraumatic subarachnoid hemorrhage, unspecified",
        "Nontraumatic subarachnoid hemorrhage, unspecified",
        0.7,
        ("Headache", "HEADACHE", "Worst headache of life", "HEAD BLEED"),
        rad=(
            Rad(
                _CTH,
                "Hyperdense blood layering in the basal cisterns and sylvian fissures.",
                "Diffuse blood in the basal cisterns; CTA recommended to evaluate for aneurysm.",
            ),
        ),
        meds=("warfarin",),
        critical="intracranial_hemorrhage",
    ),
    Condition(
        "subdural_hemorrhage",
        "subdural hematoma",
        "4321",
        "Subdural hemorrhage",
        "SUBDURAL HEMORRHAGE",
        "I6200",
        "Nontraumatic subdural hemorrhage, unspecified",
        "Nontraumatic subdural hemorrhage, unspecified",
        1.2,
        ("s/p Fall", "S/P FALL", "Headache", "Confusion", "s/p Fall, SDH"),
        rad=(
            Rad(
                _CTH,
                "Crescentic mixed-density extra-axial collection over the left convexity measuring 12 mm.",
                "Left holohemispheric extra-axial collection with 5 mm rightward shift.",
            ),
        ),
        meds=("warfarin", "apixaban", "aspirin"),
        critical="intracranial_hemorrhage",
    ),
    Condition(
        "pulmonary_embolism",
        "pulmonary embolism",
        "41519",
        "Other pulmonary embolism and infarction",
        "OTHER PULM EMBOLISM/INFARCT",
        "I2699",
        "Other pulmonary embolism without acute cor pulmonale",
        "Other pulmonary embolism without acute cor pulmonale",
        2.5,
        ("Dyspnea", "SOB", "Chest pain, Dyspnea", "Pleuritic chest pain", "Syncope"),
        labs=(("ddimer", 1200, 9000),),
        ecg=("Sinus tachycardia, S1Q3T3 pattern", "Sinus tachycardia, incomplete right bundle branch block"),
        rad=(
            Rad(
                _CTA,
                "Filling defects in the right lower lobe segmental and subsegmental pulmonary arteries.",
                "Filling defect in the right lower lobe pulmonary artery without right heart strain.",
            ),
            Rad(
                _CTA,
                "Occlusive thrombus in the left upper lobe segmental pulmonary artery.",
                "Left upper lobe segmental arterial filling defect.",
            ),
        ),
        echo=Echo(
            (55, 65),
            "Normal",
            "Mildly dilated RV with mild free wall hypokinesis",
            "Mild TR",
            "None",
            "Dilated right ventricle with hypokinesis of the free wall, suggestive of acute pressure overload",
        ),
        meds=("apixaban", "rivaroxaban"),
        critical="pulmonary_embolism",
        signs=("tachycardia", "hypoxia"),
    ),
    Condition(
        "ischemic_stroke",
        "ischemic stroke",
        "43491",
        "Cerebral artery occlusion, unspecified with cerebral infarction",
        "CRBL ART OCL UNSP W INFRC",
        "I639",
        "Cerebral infarction, unspecified",
        "Cerebral infarction, unspecified",
        3.0,
        (
            "Facial droop",
            "FACIAL DROOP",
            "Left sided weakness",
            "Slurred speech",
            "Code stroke",
            "R SIDED WEAKNESS",
        ),
        rad=(
            Rad(
                _CTH,
                "Loss of gray-white differentiation in the left MCA territory with a hyperdense left MCA.",
                "Hyperdense left MCA with early ischemic change in the left MCA territory.",
            ),
            Rad(
                _MRI,
                "Restricted diffusion in the right corona radiata and right frontal cortex.",
                "Acute infarct in the right MCA territory.",
            ),
        ),
        meds=("clopidogrel", "atorvastatin"),
        critical="stroke",
        signs=("hypertension",),
    ),
    Condition(
        "tia",
        "transient ischemic attack",
        "4359",
        "Unspecified transient cerebral ischemia",
        "TRANS CEREB ISCHEMIA UNSP",
        "G459",
        "Transient cerebral ischemic attack, unspecified",
        "Transient cerebral ischemic attack, unspecified",
        1.5,
        ("Facial droop", "Word finding difficulty", "Transient weakness", "Numbness"),
        rad=(
            Rad(
                _MRI,
                "No restricted diffusion. Scattered periventricular white matter hyperintensities.",
                "No acute infarct. Chronic small vessel ischemic disease.",
            ),
        ),
        meds=("aspirin", "clopidogrel"),
        ed_weight=0.6,
    ),
    Condition(
        "hematemesis",
        "upper GI bleed",
        "5780",
        "Hematemesis",
        "HEMATEMESIS",
        "K920",
        "Hematemesis",
        "Hematemesis",
        1.5,
        ("VOMITING BLOOD", "Coffee ground emesis", "Hematemesis", "GI bleed"),
        labs=(("hgb", 5.5, 8.9), ("bun", 32, 80)),
        meds=("pantoprazole", "naproxen"),
        critical="gi_bleeding",
        signs=("tachycardia",),
    ),
    Condition(
        "melena",
        "lower GI bleed",
        "5781",
        "Blood in stool",
        "BLOOD IN STOOL",
        "K921",
        "Melena",
        "Melena",
        2.0,
        ("BRBPR", "Melena", "Black stools", "GI BLEED", "Rectal bleeding"),
        labs=(("hgb", 5.8, 9.2),),
        meds=("pantoprazole", "warfarin"),
        critical="gi_bleeding",
        signs=("tachycardia",),
    ),
    Condition(
        "gastric_ulcer_bleed",
        "bleeding gastric ulcer",
        "53100",
        "Acute gastric ulcer with hemorrhage, without mention of obstruction",
        "AC STOMACH ULCER W HEM",
        "K250",
        "Acute gastric ulcer with hemorrhage",
        "Acute gastric ulcer with hemorrhage",
        0.8,
        ("Coffee ground emesis", "Melena", "Epigastric pain", "GI BLEED"),
        labs=(("hgb", 5.5, 8.5), ("bun", 35, 90)),
        rad=(
            Rad(
                _CTAP,
                "Focal wall thickening of the gastric antrum with adjacent inflammatory stranding.",
                "Gastric antral wall thickening, likely peptic disease.",
            ),
        ),
        meds=("pantoprazole", "omeprazole", "ibuprofen"),
        critical="gi_bleeding",
    ),
    Condition(
        "chf",
        "acute on chronic systolic heart failure",
        "42823",
        "Acute on chronic systolic heart failure",
        "AC ON CHR SYST HRT FAIL",
        "I5023",
        "Acute on chronic systolic (congestive) heart failure",
        "Acute on chronic systolic (congestive) heart failure",
        5.0,
        ("Dyspnea", "SOB", "Leg swelling", "DOE", "Dyspnea, Edema", "Weight gain"),
        labs=(("bnp", 3500, 35000),),
        rad=(
            Rad(
                _CXR,
                "Cardiomegaly with vascular congestion, bilateral interstitial edema and small bilateral "
                "pleural effusions.",
                "Moderate pulmonary edema with small bilateral effusions.",
            ),
        ),
        echo=Echo(
            (15, 30),
            "Global hypokinesis",
            "Mildly depressed",
            "Moderate (2+) MR",
            "None",
            "Severely depressed left ventricular systolic function with global hypokinesis",
        ),
        meds=("furosemide", "carvedilol", "sacubitril-valsartan", "spironolactone"),
        signs=("hypoxia",),
    ),
    Condition(
        "afib",
        "atrial fibrillation with rapid ventricular response",
        "42731",
        "Atrial fibrillation",
        "ATRIAL FIBRILLATION",
        "I4891",
        "Unspecified atrial fibrillation",
        "Unspecified atrial fibrillation",
        4.5,
        ("Palpitations", "PALPITATIONS", "Tachycardia", "Dyspnea", "Weakness, Atrial fibrillation, Transfer"),
        ecg=(
            "Atrial fibrillation with rapid ventricular response",
            "Irregularly irregular narrow complex tachycardia without discernible P waves",
        ),
        vitals=("afib_rhythm",),
        meds=("apixaban", "diltiazem", "metoprolol tartrate", "warfarin"),
        ed_weight=0.8,
    ),
    Condition(
        "aflutter",
        "atrial flutter",
        "42732",
        "Atrial flutter",
        "ATRIAL FLUTTER",
        "I4892",
        "Unspecified atrial flutter",
        "Unspecified atrial flutter",
        0.8,
        ("Palpitations", "Tachycardia"),
        ecg=(
            "Atrial flutter with 2:1 AV conduction",
            "Regular narrow complex tachycardia, flutter waves in II, III, aVF",
        ),
        meds=("apixaban", "metoprolol tartrate"),
    ),
    Condition(
        "chb",
        "complete heart block",
        "4260",
        "Atrioventricular block, complete",
        "ATRIOVENT BLOCK COMPLETE",
        "I442",
        "Atrioventricular block, complete",
        "Atrioventricular block, complete",
        0.6,
        ("Bradycardia", "Dizziness", "Syncope", "Weakness"),
        ecg=(
            "Complete AV block with junctional escape rhythm",
            "AV dissociation with wide complex escape rhythm",
        ),
        vitals=("bradycardia",),
        meds=("metoprolol tartrate", "digoxin"),
    ),
    Condition(
        "pneumonia",
        "pneumonia",
        "486",
        "Pneumonia, organism unspecified",
        "PNEUMONIA,ORGANISM UNSPECIFIED",
        "J189",
        "Pneumonia, unspecified organism",
        "Pneumonia, unspecified organism",
        6.0,
        ("Cough", "Fever", "Dyspnea", "Cough, Dyspnea", "Fever, Cough", "SOB"),
        labs=(("wbc", 13.0, 24.0),),
        rad=(
            Rad(
                _CXR,
                "New consolidation in the right lower lobe with air bronchograms.",
                "Right lower lobe consolidation.",
            ),
            Rad(
                _CXR,
                "Patchy airspace opacity in the left lower lobe.",
                "Left lower lobe opacity concerning for infection.",
            ),
        ),
        meds=("azithromycin",),
        micro=("SPUTUM", "RESPIRATORY CULTURE", "STREPTOCOCCUS PNEUMONIAE"),
        ed_weight=1.0,
        signs=("fever", "hypoxia"),
    ),
    Condition(
        "copd",
        "COPD exacerbation",
        "49121",
        "Obstructive chronic bronchitis with (acute) exacerbation",
        "OBS CHR BRONC W(AC) EXAC",
        "J441",
        "Chronic obstructive pulmonary disease with (acute) exacerbation",
        "Chronic obstructive pulmonary disease w (acute) exacerbation",
        3.0,
        ("Dyspnea", "SOB", "Wheezing", "Cough, Dyspnea"),
        labs=(("pco2", 55, 85), ("ph", 7.21, 7.33)),
        rad=(
            Rad(
                _CXR,
                "Hyperinflated lungs with flattened hemidiaphragms. No focal consolidation.",
                "Hyperinflation without acute superimposed process.",
            ),
        ),
        meds=("tiotropium", "albuterol inhaler", "fluticasone-salmeterol"),
        ed_weight=1.0,
        signs=("hypoxia", "tachypnea"),
    ),
    Condition(
        "asthma",
        "asthma exacerbation",
        "49392",
        "Asthma, unspecified type, with (acute) exacerbation",
        "ASTHMA, UNSPEC W (AC) EXAC",
        "J45901",
        "Unspecified asthma with (acute) exacerbation",
        "Unspecified asthma with (acute) exacerbation",
        1.2,
        ("Wheezing", "SOB", "Asthma"),
        meds=("albuterol inhaler", "fluticasone-salmeterol", "montelukast"),
        ed_weight=1.5,
        signs=("tachypnea", "hypoxia"),
    ),
    Condition(
        "uti",
        "urinary tract infection",
        "5990",
        "Urinary tract infection, site not specified",
        "URIN TRACT INFECTION, SITE NOT SPEC",
        "N390",
        "Urinary tract infection, site not specified",
        "Urinary tract infection, site not specified",
        5.0,
        ("Dysuria", "Fever", "Altered mental status", "Weakness", "Abnormal labs"),
        labs=(("u_wbc", 25, 180), ("u_nitrite", 1, 1), ("u_leuk", 1, 1)),
        meds=("nitrofurantoin",),
        micro=("URINE", "URINE CULTURE", "ESCHERICHIA COLI"),
        ed_weight=2.5,
    ),
    Condition(
        "pyelonephritis",
        "pyelonephritis",
        "59010",
        "Acute pyelonephritis without lesion of renal medullary necrosis",
        "ACUTE PYELONEPHRITIS",
        "N10",
        "Acute pyelonephritis",
        "Acute pyelonephritis",
        1.2,
        ("Flank pain", "Fever", "Dysuria, Fever"),
        labs=(("u_wbc", 40, 200), ("wbc", 13.0, 22.0)),
        rad=(
            Rad(
                _CTAP,
                "Striated nephrogram of the right kidney with perinephric stranding.",
                "Striated right nephrogram with perinephric stranding, compatible with infection.",
            ),
        ),
        micro=("URINE", "URINE CULTURE", "KLEBSIELLA PNEUMONIAE"),
        ed_weight=0.8,
        signs=("fever",),
    ),
    Condition(
        "aki",
        "acute kidney injury",
        "5849",
        "Acute kidney failure, unspecified",
        "ACUTE KIDNEY FAILURE, UNSPECIFIED",
        "N179",
        "Acute kidney failure, unspecified",
        "Acute kidney failure, unspecified",
        4.0,
        ("Abnormal labs", "Weakness", "Decreased urine output", "Transfer"),
        labs=(("creat", 2.4, 7.5), ("bun", 45, 120)),
        meds=("lisinopril", "furosemide"),
    ),
    Condition(
        "hyponatremia",
        "hyponatremia",
        "2761",
        "Hyposmolality and/or hyponatremia",
        "HYPOSMOLALITY",
        "E871",
        "Hypo-osmolality and hyponatremia",
        "Hypo-osmolality and hyponatremia",
        2.5,
        ("Abnormal labs", "Weakness", "Confusion", "Fall"),
        labs=(("na", 112, 128),),
        meds=("hydrochlorothiazide", "sertraline"),
    ),
    Condition(
        "hyperkalemia",
        "hyperkalemia",
        "2767",
        "Hyperpotassemia",
        "HYPERPOTASSEMIA",
        "E875",
        "Hyperkalemia",
        "Hyperkalemia",
        1.2,
        ("Abnormal labs", "Weakness"),
        labs=(("k", 6.0, 7.8),),
        ecg=("Peaked T waves, consider hyperkalemia",),
        meds=("spironolactone", "lisinopril"),
    ),
    Condition(
        "dka",
        "diabetic ketoacidosis",
        "25013",
        "Diabetes with ketoacidosis, type I [juvenile type], uncontrolled",
        "DMI KETOACD UNCONTROLD",
        "E1010",
        "Type 1 diabetes mellitus with ketoacidosis without coma",
        "Type 1 diabetes mellitus with ketoacidosis without coma",
        1.0,
        ("Hyperglycemia", "DKA", "Nausea/Vomiting", "Abd pain, N/V"),
        labs=(("glucose", 420, 900), ("aniongap", 24, 38), ("bhb", 30, 80), ("hco3", 5, 13)),
        meds=("insulin glargine", "insulin lispro"),
    ),
    Condition(
        "hypoglycemia",
        "hypoglycemia",
        "2512",
        "Hypoglycemia, unspecified",
        "HYPOGLYCEMIA, UNSPECIFIED",
        "E162",
        "Hypoglycemia, unspecified",
        "Hypoglycemia, unspecified",
        0.8,
        ("Hypoglycemia", "Altered mental status", "Unresponsive"),
        labs=(("glucose", 22, 52),),
        meds=("insulin glargine", "glipizide"),
        ed_weight=0.6,
    ),
    Condition(
        "dehydration",
        "dehydration",
        "27651",
        "Dehydration",
        "DEHYDRATION",
        "E860",
        "Dehydration",
        "Dehydration",
        1.5,
        ("Weakness", "Nausea/Vomiting", "Diarrhea", "Poor PO intake"),
        labs=(("bun", 30, 60),),
        meds=("hydrochlorothiazide",),
        ed_weight=1.2,
        signs=("tachycardia",),
    ),
    Condition(
        "cellulitis",
        "cellulitis of the leg",
        "6826",
        "Cellulitis and abscess of leg, except foot",
        "CELLULITIS OF LEG",
        "L03115",
        "Cellulitis of right lower limb",
        "Cellulitis of right lower limb",
        3.0,
        ("Leg swelling", "R Leg redness", "Leg pain", "Cellulitis"),
        labs=(("wbc", 12.5, 20.0),),
        rad=(
            Rad(
                "LOWER EXTREMITY US",
                "Subcutaneous edema with cobblestoning in the right calf; no drainable fluid collection.",
                "Subcutaneous edema of the right calf, no abscess.",
            ),
        ),
        meds=("cephalexin",),
        ed_weight=2.0,
        signs=("fever",),
    ),
    Condition(
        "appendicitis",
        "acute appendicitis",
        "5409",
        "Acute appendicitis without mention of peritonitis",
        "ACUTE APPENDICITIS NOS",
        "K3580",
        "Unspecified acute appendicitis",
        "Unspecified acute appendicitis",
        1.5,
        ("RLQ abdominal pain", "Abd pain", "ABD PAIN"),
        labs=(("wbc", 12.5, 19.0),),
        rad=(
            Rad(
                _CTAP,
                "Dilated fluid-filled appendix measuring 13 mm with periappendiceal fat stranding.",
                "Dilated appendix with periappendiceal inflammation.",
            ),
        ),
        signs=("fever",),
    ),
    Condition(
        "cholecystitis",
        "acute cholecystitis",
        "57400",
        "Calculus of gallbladder with acute cholecystitis, without mention of obstruction",
        "CHOLELITH W AC CHOLECYST",
        "K8000",
        "Calculus of gallbladder with acute cholecystitis without obstruction",
        "Calculus of gallbladder w acute cholecyst w/o obstruction",
        1.5,
        ("RUQ abdominal pain", "Abd pain", "Epigastric pain", "Abd pain, N/V"),
        labs=(("wbc", 12.0, 18.0), ("alp", 130, 320)),
        rad=(
            Rad(
                _US_RUQ,
                "Distended gallbladder with wall thickening to 6 mm, pericholecystic fluid and a 2 cm "
                "stone impacted in the neck. Positive sonographic Murphy's sign.",
                "Gallstones with gallbladder wall thickening and pericholecystic fluid.",
            ),
        ),
        signs=("fever",),
    ),
    Condition(
        "pancreatitis",
        "acute pancreatitis",
        "5770",
        "Acute pancreatitis",
        "ACUTE PANCREATITIS",
        "K859",
        "Acute pancreatitis, unspecified",
        "Acute pancreatitis, unspecified",
        2.0,
        ("Epigastric pain", "Abd pain", "Abd pain, N/V"),
        labs=(("lipase", 480, 4500),),
        rad=(
            Rad(
                _CTAP,
                "Edematous pancreas with peripancreatic fat stranding and fluid.",
                "Peripancreatic inflammatory change without necrosis.",
            ),
        ),
        meds=("pancrelipase",),
    ),
    Condition(
        "sbo",
        "small bowel obstruction",
        "56089",
        "Other specified intestinal obstruction",
        "OTHER INTESTINAL OBSTRUCTION",
        "K5660",
        "Unspecified intestinal obstruction",
        "Unspecified intestinal obstruction",
        1.5,
        ("Abd pain", "Nausea/Vomiting", "Abd distension", "Abd pain, N/V"),
        rad=(
            Rad(
                _CTAP,
                "Multiple dilated fluid-filled loops of small bowel up to 4 cm with a transition point "
                "in the right lower quadrant; decompressed distal ileum.",
                "Dilated small bowel with transition point in the right lower quadrant.",
            ),
        ),
        signs=("tachycardia",),
    ),
    Condition(
        "diverticulitis",
        "diverticulitis",
        "56211",
        "Diverticulitis of colon (without mention of hemorrhage)",
        "DVRTCLI COLON W/O HMRHG",
        "K5732",
        "Diverticulitis of large intestine without perforation or abscess without bleeding",
        "Dvtrcli of lg int w/o perforation or abscess w/o bleeding",
        1.5,
        ("LLQ abdominal pain", "Abd pain", "ABD PAIN"),
        labs=(("wbc", 12.0, 18.0),),
        rad=(
            Rad(
                _CTAP,
                "Sigmoid colonic wall thickening with adjacent fat stranding centered on an inflamed "
                "diverticulum.",
                "Inflamed sigmoid diverticulum without abscess or free air.",
            ),
        ),
        ed_weight=0.8,
        signs=("fever",),
    ),
    Condition(
        "epilepsy",
        "seizure disorder",
        "34590",
        "Epilepsy, unspecified, without mention of intractable epilepsy",
        "EPILEPSY UNSP W/O INTR EPIL",
        "G40909",
        "Epilepsy, unspecified, not intractable, without status epilepticus",
        "Epilepsy, unsp, not intractable, without status epilepticus",
        1.5,
        ("Seizure", "SEIZURE", "s/p Seizure"),
        rad=(
            Rad(
                _MRI,
                "Increased T2/FLAIR signal and volume loss of the right hippocampus.",
                "Right mesial temporal sclerosis.",
            ),
        ),
        meds=("levetiracetam", "lamotrigine", "phenytoin"),
        ed_weight=1.2,
        signs=("tachycardia",),
    ),
    Condition(
        "hip_fracture",
        "right hip fracture",
        "82021",
        "Closed fracture of intertrochanteric section of neck of femur",
        "INTERTROCHANTERIC FX-CL",
        "S72141A",
        "Displaced intertrochanteric fracture of right femur, initial encounter for closed fracture",
        "Displaced intertrochanteric fracture of right femur, init",
        2.0,
        ("s/p Fall", "S/P FALL", "Hip pain", "R Hip pain"),
        rad=(
            Rad(
                "HIP 2 VIEWS (AP,LAT) RIGHT",
                "Comminuted lucency through the right intertrochanteric region with varus angulation.",
                "Acute displaced right intertrochanteric femoral break.",
            ),
        ),
    ),
    Condition(
        "alcohol_withdrawal",
        "alcohol withdrawal",
        "29181",
        "Alcohol withdrawal",
        "ALCOHOL WITHDRAWAL",
        "F10239",
        "Alcohol dependence with withdrawal, unspecified",
        "Alcohol dependence with withdrawal, unspecified",
        2.0,
        ("ETOH", "Etoh withdrawal", "Tremors", "Seizure", "Anxiety"),
        meds=("thiamine", "folic acid", "naltrexone"),
        ed_weight=1.5,
        signs=("tachycardia", "hypertension"),
    ),
    Condition(
        "hypertension",
        "hypertensive emergency",
        "4010",
        "Malignant essential hypertension",
        "MALIGNANT HYPERTENSION",
        "I161",
        "Hypertensive emergency",
        "Hypertensive emergency",
        1.5,
        ("Hypertension", "HYPERTENSION", "Headache", "Elevated BP"),
        vitals=("hypertension",),
        meds=("amlodipine", "lisinopril", "hydrochlorothiazide"),
        ed_weight=1.2,
    ),
    Condition(
        "dvt",
        "deep vein thrombosis",
        "45340",
        "Acute venous embolism and thrombosis of unspecified deep vessels of lower extremity",
        "AC DVT/EMBL LOW EXT UNSP",
        "I82401",
        "Acute embolism and thrombosis of unspecified deep veins of right lower extremity",
        "Acute embolism and thombos unsp deep veins of r low extrem",
        1.2,
        ("Leg swelling", "R Leg pain", "Leg pain"),
        labs=(("ddimer", 900, 6000),),
        rad=(
            Rad(
                _LENI,
                "Noncompressible right common femoral and popliteal veins with echogenic intraluminal "
                "material and absent flow.",
                "Occlusive thrombus in the right femoral and popliteal veins.",
            ),
        ),
        meds=("rivaroxaban", "apixaban"),
        ed_weight=0.8,
    ),
    Condition(
        "posthemorrhagic_anemia",
        "acute blood loss anemia",
        "2851",
        "Acute posthemorrhagic anemia",
        "AC POSTHEMORRHAG ANEMIA",
        "D62",
        "Acute posthemorrhagic anemia",
        "Acute posthemorrhagic anemia",
        2.5,
        ("Weakness", "Abnormal labs", "Dizziness", "Melena"),
        labs=(("hgb", 5.5, 8.0), ("hct", 17.0, 25.0)),
        meds=("ferrous sulfate",),
        signs=("tachycardia",),
    ),
    Condition(
        "aortic_dissection",
        "aortic dissection",
        "44100",
        "Dissection of aorta, unspecified site",
        "DSCT OF AORTA UNSP SITE",
        "I7100",
        "Dissection of unspecified site of aorta",
        "Dissection of unspecified site of aorta",
        0.5,
        ("Chest pain", "Back pain", "Tearing chest pain"),
        rad=(
            Rad(
                _CTA,
                "Intimal flap extending from the aortic root through the descending thoracic aorta.",
                "Intimal flap from the ascending through the descending thoracic aorta (Stanford type A).",
            ),
        ),
        meds=("amlodipine", "metoprolol tartrate"),
    ),
    Condition(
        "pneumothorax",
        "pneumothorax",
        "51289",
        "Other pneumothorax",
        "OTHER PNEUMOTHORAX",
        "J939",
        "Pneumothorax, unspecified",
        "Pneumothorax, unspecified",
        0.6,
        ("Chest pain", "Dyspnea", "Pleuritic chest pain"),
        rad=(
            Rad(
                _CXR,
                "Visceral pleural line in the right apex with absent lung markings peripherally.",
                "Moderate right apical pleural air without tension.",
            ),
        ),
        signs=("hypoxia",),
    ),
    Condition(
        "tamponade",
        "cardiac tamponade",
        "4233",
        "Cardiac tamponade",
        "CARDIAC TAMPONADE",
        "I314",
        "Cardiac tamponade",
        "Cardiac tamponade",
        0.3,
        ("Dyspnea", "Hypotension", "Chest pain"),
        ecg=("Low QRS voltages, electrical alternans",),
        echo=Echo(
            (55, 65),
            "Normal",
            "RV diastolic collapse",
            "Normal",
            "Large",
            "Large circumferential pericardial effusion with right ventricular diastolic collapse",
        ),
        signs=("hypotension", "tachycardia"),
    ),
    Condition(
        "cirrhosis",
        "cirrhosis",
        "5715",
        "Cirrhosis of liver without mention of alcohol",
        "CIRRHOSIS OF LIVER W/O ALCOHOL",
        "K7460",
        "Unspecified cirrhosis of liver",
        "Unspecified cirrhosis of liver",
        2.0,
        ("Abd distension", "Confusion", "Jaundice", "Abnormal labs"),
        labs=(("tbili", 3.5, 12.0), ("ammonia", 80, 220), ("inr", 1.8, 3.2)),
        rad=(
            Rad(
                _US_RUQ,
                "Shrunken liver with a nodular contour and large volume ascites. Splenomegaly.",
                "Nodular liver contour with ascites and splenomegaly.",
            ),
        ),
        meds=("lactulose", "rifaximin", "spironolactone", "nadolol"),
    ),
    Condition(
        "influenza",
        "influenza",
        "4871",
        "Influenza with other respiratory manifestations",
        "FLU W OTH RESP MANIFEST",
        "J111",
        "Influenza due to unidentified influenza virus with other respiratory manifestations",
        "Flu due to unidentified influenza virus w oth resp manifest",
        1.0,
        ("Fever", "Cough", "Body aches", "Fever, Cough"),
        micro=(
            "Rapid Respiratory Viral Screen & Culture",
            "Respiratory Viral Antigen Screen",
            "POSITIVE FOR INFLUENZA A VIRAL ANTIGEN",
        ),
        ed_weight=1.5,
        signs=("fever",),
    ),
    Condition(
        "kidney_stone",
        "nephrolithiasis",
        "5920",
        "Calculus of kidney",
        "CALCULUS OF KIDNEY",
        "N200",
        "Calculus of kidney",
        "Calculus of kidney",
        0.8,
        ("Flank pain", "L Flank pain", "Hematuria"),
        labs=(("u_rbc", 20, 150),),
        rad=(
            Rad(
                "CT ABD & PELVIS W/O CONTRAST",
                "7 mm obstructing calculus at the left ureterovesical junction "
                "with moderate left hydronephrosis.",
                "Obstructing left UVJ calculus with moderate hydronephrosis.",
            ),
        ),
        meds=("tamsulosin",),
        ed_weight=2.0,
    ),
    Condition(
        "c_diff",
        "C. difficile colitis",
        "00845",
        "Intestinal infection due to Clostridium difficile",
        "INT INF CLSTRDIUM DFCILE",
        "A047",
        "Enterocolitis due to Clostridium difficile",
        "Enterocolitis due to Clostridium difficile",
        1.0,
        ("Diarrhea", "Abd pain", "Diarrhea, Fever"),
        labs=(("wbc", 15.0, 35.0),),
        rad=(
            Rad(
                _CTAP,
                "Diffuse colonic wall thickening with mucosal hyperenhancement, compatible with pancolitis.",
                "Pancolitis, infectious etiology favored.",
            ),
        ),
        meds=("vancomycin oral", "metronidazole"),
        micro=("STOOL", "C. difficile PCR", "CLOSTRIDIUM DIFFICILE"),
    ),
    Condition(
        "anaphylaxis",
        "anaphylaxis",
        "9950",
        "Other anaphylactic reaction",
        "OTHER ANAPHYLACTIC REACT",
        "T782XXA",
        "Anaphylactic shock, unspecified, initial encounter",
        "Anaphylactic shock, unspecified, initial encounter",
        0.4,
        ("Allergic reaction", "Facial swelling", "Hives, SOB"),
        meds=("epinephrine auto-injector",),
        ed_weight=1.0,
        signs=("hypotension", "tachycardia"),
    ),
    Condition(
        "hyperglycemia_dm2",
        "uncontrolled type 2 diabetes",
        "25002",
        "Diabetes mellitus without mention of complication, type II or unspecified type, uncontrolled",
        "DMII WO CMP UNCNTRLD",
        "E1165",
        "Type 2 diabetes mellitus with hyperglycemia",
        "Type 2 diabetes mellitus with hyperglycemia",
        1.5,
        ("Hyperglycemia", "Abnormal labs", "Polyuria"),
        labs=(("glucose", 350, 650),),
        meds=("metformin", "glipizide", "insulin glargine"),
        ed_weight=0.8,
    ),
)

CONDITION_BY_KEY: dict[str, Condition] = {c.key: c for c in CONDITIONS}


@dataclass(frozen=True)
class FilteredCode:
    """A label the paper's filter should drop (symptom chapter, V/Z, E/W, or NOS/NEC title)."""

    key: str
    icd9: str
    icd9_title: str
    icd9_short: str
    icd10: str
    icd10_title: str
    icd10_short: str
    weight: float
    complaints: tuple[str, ...] = ()


FILTERED_CODES: tuple[FilteredCode, ...] = (
    FilteredCode(
        "chest_pain",
        "78650",
        "Chest pain, unspecified",
        "CHEST PAIN NOS",
        "R079",
        "Chest pain, unspecified",
        "Chest pain, unspecified",
        4.0,
        ("Chest pain", "CHEST PAIN"),
    ),
    FilteredCode(
        "syncope",
        "7802",
        "Syncope and collapse",
        "SYNCOPE AND COLLAPSE",
        "R55",
        "Syncope and collapse",
        "Syncope and collapse",
        2.5,
        ("Syncope", "SYNCOPE"),
    ),
    FilteredCode(
        "sob",
        "78605",
        "Shortness of breath",
        "SHORTNESS OF BREATH",
        "R0602",
        "Shortness of breath",
        "Shortness of breath",
        2.0,
        ("SOB", "Dyspnea"),
    ),
    FilteredCode(
        "ams",
        "78097",
        "Altered mental status",
        "ALTERED MENTAL STATUS ",
        "R4182",
        "Altered mental status, unspecified",
        "Altered mental status, unspecified",
        2.0,
        ("Altered mental status", "AMS"),
    ),
    FilteredCode(
        "fever",
        "78060",
        "Fever, unspecified",
        "FEVER NOS",
        "R509",
        "Fever, unspecified",
        "Fever, unspecified",
        1.5,
        ("Fever",),
    ),
    FilteredCode(
        "abd_pain",
        "78900",
        "Abdominal pain, unspecified site",
        "ABDMNAL PAIN UNSPCF SITE",
        "R109",
        "Unspecified abdominal pain",
        "Unspecified abdominal pain",
        3.0,
        ("Abd pain", "ABD PAIN"),
    ),
    FilteredCode(
        "fall",
        "E8889",
        "Unspecified fall",
        "FALL NOS",
        "W19XXXA",
        "Unspecified fall, initial encounter",
        "Unspecified fall, initial encounter",
        2.0,
        ("s/p Fall", "S/P FALL"),
    ),
    FilteredCode(
        "anticoag",
        "V5861",
        "Long-term (current) use of anticoagulants",
        "LONG-TERM USE ANTICOAGUL",
        "Z7901",
        "Long term (current) use of anticoagulants",
        "Long term (current) use of anticoagulants",
        1.5,
    ),
    FilteredCode(
        "insulin",
        "V5867",
        "Long-term (current) use of insulin",
        "LONG-TERM USE OF INSULIN",
        "Z794",
        "Long term (current) use of insulin",
        "Long term (current) use of insulin",
        1.0,
    ),
    FilteredCode(
        "hyperlipidemia",
        "2724",
        "Other and unspecified hyperlipidemia",
        "HYPERLIPIDEMIA NEC/NOS",
        "E785",
        "Hyperlipidemia, unspecified",
        "Hyperlipidemia, unspecified",
        1.0,
    ),
    FilteredCode(
        "septic_shock",
        "78552",
        "Septic shock",
        "SEPTIC SHOCK",
        "R6521",
        "Severe sepsis with septic shock",
        "Severe sepsis with septic shock",
        0.6,
    ),
    FilteredCode(
        "severe_sepsis",
        "99592",
        "Severe sepsis",
        "SEVERE SEPSIS ",
        "R6520",
        "Severe sepsis without septic shock",
        "Severe sepsis without septic shock",
        0.6,
    ),
    FilteredCode(
        "weakness",
        "78079",
        "Other malaise and fatigue",
        "MALAISE AND FATIGUE NEC",
        "R531",
        "Weakness",
        "Weakness",
        2.0,
        ("Weakness", "WEAKNESS"),
    ),
    FilteredCode(
        "myelitis_nos",
        "34120",
        "Acute (transverse) myelitis NOS",
        "ACUTE MYELITIS NOS",
        "G0489",
        "Other myelitis",
        "Other myelitis",
        0.1,
        ("Leg weakness",),
    ),
    FilteredCode(
        "urethral_nos",
        "59781",
        "Urethral syndrome NOS",
        "URETHRAL SYNDROME NOS",
        "N3289",
        "Other specified disorders of bladder",
        "Other specified disorders of bladder",
        0.2,
    ),
)

# Chronic comorbidities coded on hospital admissions (diagnoses_icd) and listed as secondary
# discharge diagnoses: (key, lay name, icd9, icd9 long title, icd10, icd10 long title, weight).
COMORBIDITIES: tuple[tuple[str, str, str, str, str, str, float], ...] = (
    (
        "htn",
        "Hypertension",
        "4019",
        "Unspecified essential hypertension",
        "I10",
        "Essential (primary) hypertension",
        5.0,
    ),
    (
        "dm2",
        "Type 2 diabetes",
        "25000",
        "Diabetes mellitus without mention of complication, type II or unspecified "
        "type, not stated as uncontrolled",
        "E119",
        "Type 2 diabetes mellitus without complications",
        3.0,
    ),
    (
        "ckd",
        "Chronic kidney disease",
        "5859",
        "Chronic kidney disease, unspecified",
        "N189",
        "Chronic kidney disease, unspecified",
        1.5,
    ),
    (
        "gerd",
        "GERD",
        "53081",
        "Esophageal reflux",
        "K219",
        "Gastro-esophageal reflux disease without esophagitis",
        2.0,
    ),
    (
        "depression",
        "Depression",
        "311",
        "Depressive disorder, not elsewhere classified",
        "F329",
        "Major depressive disorder, single episode, unspecified",
        1.5,
    ),
    (
        "tobacco",
        "Tobacco use",
        "3051",
        "Tobacco use disorder",
        "F17210",
        "Nicotine dependence, cigarettes, uncomplicated",
        1.2,
    ),
    (
        "obesity",
        "Obesity",
        "27800",
        "Obesity, unspecified",
        "E6601",
        "Morbid (severe) obesity due to excess calories",
        1.0,
    ),
    (
        "hypothyroid",
        "Hypothyroidism",
        "2449",
        "Unspecified acquired hypothyroidism",
        "E039",
        "Hypothyroidism, unspecified",
        1.0,
    ),
    (
        "cad",
        "Coronary artery disease",
        "41401",
        "Coronary atherosclerosis of native coronary artery",
        "I2510",
        "Atherosclerotic heart disease of native coronary artery without angina pectoris",
        2.0,
    ),
    ("anemia", "Anemia", "2859", "Anemia, unspecified", "D649", "Anemia, unspecified", 1.5),
    (
        "mitral",
        "Mitral regurgitation",
        "4240",
        "Mitral valve disorders",
        "I340",
        "Nonrheumatic mitral (valve) insufficiency",
        0.5,
    ),
    (
        "hx_tobacco",
        "Former smoker",
        "V1582",
        "Personal history of tobacco use",
        "Z87891",
        "Personal history of nicotine dependence",
        1.0,
    ),
)

# Generic chief complaints (no condition signal), as ED triage nurses write them.
GENERIC_COMPLAINTS = (
    "Weakness",
    "Abnormal labs",
    "Transfer",
    "Fatigue",
    "Dizziness",
    "s/p Fall",
    "Nausea",
    "Malaise",
    "Generalized weakness",
    "Eval",
    "UNKNOWN-CC",
    "Pain",
    "Back pain",
)

# Vital-sign abnormalities: column -> (low, high) for the abnormal draw.
VITAL_ABNORMALITIES: dict[str, dict[str, tuple[float, float]]] = {
    "fever": {"temperature": (100.9, 103.8)},
    "tachycardia": {"heartrate": (112, 150)},
    "hypotension": {"sbp": (68, 88), "dbp": (35, 52)},
    "hypoxia": {"o2sat": (80, 89)},
    "tachypnea": {"resprate": (26, 36)},
    "hypertension": {"sbp": (192, 235), "dbp": (105, 135)},
    "bradycardia": {"heartrate": (28, 42)},
    "afib_rhythm": {"heartrate": (118, 160)},
}


@dataclass(frozen=True)
class Medication:
    """A home or ED medication: name, GSN, NDC, ETC code and its description (codes invented)."""

    name: str
    gsn: str
    ndc: str
    etccode: str
    etcdescription: str


def _med(i: int, name: str, etc: str) -> Medication:
    # Invented but well-formed codes: 6-digit GSN, 11-digit NDC, 8-digit ETC code.
    return Medication(
        name, f"{70000 + i * 37:06d}", f"{60000000000 + i * 104729:011d}", f"{5000 + i:08d}", etc
    )


_MED_ROWS = (
    ("aspirin", "Platelet Aggregation Inhibitors"),
    ("atorvastatin", "Antihyperlipidemic - HMG CoA Reductase Inhibitors"),
    ("nitroglycerin", "Antianginal - Coronary Vasodilators (Nitrates)"),
    ("metoprolol succinate", "Beta Blockers Cardio-Selective"),
    ("metoprolol tartrate", "Beta Blockers Cardio-Selective"),
    ("clopidogrel", "Platelet Aggregation Inhibitors"),
    ("isosorbide mononitrate", "Antianginal - Coronary Vasodilators (Nitrates)"),
    ("warfarin", "Anticoagulants - Coumarin"),
    ("apixaban", "Anticoagulants - Direct Factor Xa Inhibitors"),
    ("rivaroxaban", "Anticoagulants - Direct Factor Xa Inhibitors"),
    ("pantoprazole", "Proton Pump Inhibitors"),
    ("omeprazole", "Proton Pump Inhibitors"),
    ("naproxen", "NSAIDs"),
    ("ibuprofen", "NSAIDs"),
    ("furosemide", "Loop Diuretics"),
    ("carvedilol", "Alpha-Beta Blockers"),
    ("sacubitril-valsartan", "Angiotensin II Receptor Blocker-Neprilysin Inhibitor Comb"),
    ("spironolactone", "Aldosterone Receptor Antagonists"),
    ("diltiazem", "Calcium Channel Blockers"),
    ("digoxin", "Cardiac Glycosides"),
    ("azithromycin", "Macrolides"),
    ("tiotropium", "Anticholinergics - Inhaled"),
    ("albuterol inhaler", "Beta-Adrenergic Agents - Inhaled, Short Acting"),
    ("fluticasone-salmeterol", "Corticosteroid-Beta Agonist Combinations - Inhaled"),
    ("montelukast", "Leukotriene Receptor Antagonists"),
    ("nitrofurantoin", "Urinary Anti-Infectives"),
    ("lisinopril", "ACE Inhibitors"),
    ("hydrochlorothiazide", "Thiazide Diuretics"),
    ("sertraline", "Selective Serotonin Reuptake Inhibitors (SSRIs)"),
    ("insulin glargine", "Insulins - Long Acting"),
    ("insulin lispro", "Insulins - Rapid Acting"),
    ("glipizide", "Sulfonylureas"),
    ("metformin", "Biguanides"),
    ("cephalexin", "Cephalosporins - 1st Generation"),
    ("pancrelipase", "Digestive Enzymes"),
    ("levetiracetam", "Anticonvulsants - Misc."),
    ("lamotrigine", "Anticonvulsants - Misc."),
    ("phenytoin", "Hydantoins"),
    ("thiamine", "Vitamins - B-1"),
    ("folic acid", "Folic Acid"),
    ("naltrexone", "Opioid Antagonists"),
    ("amlodipine", "Calcium Channel Blockers"),
    ("ferrous sulfate", "Iron"),
    ("lactulose", "Ammonia Detoxicants"),
    ("rifaximin", "Rifamycins"),
    ("nadolol", "Beta Blockers Non-Selective"),
    ("tamsulosin", "Alpha Blockers"),
    ("vancomycin oral", "Glycopeptides"),
    ("metronidazole", "Nitroimidazoles"),
    ("epinephrine auto-injector", "Sympathomimetics"),
    # Neutral background medications (no condition signal).
    ("acetaminophen", "Analgesics - Misc."),
    ("multivitamin", "Multivitamins"),
    ("cholecalciferol (vitamin D3)", "Vitamins - D"),
    ("docusate sodium", "Stool Softeners"),
    ("senna", "Laxatives - Stimulant"),
    ("loratadine", "Antihistamines - Non-Sedating"),
    ("calcium carbonate", "Calcium"),
    ("fish oil", "Nutritional Supplements"),
    ("melatonin", "Dietary Supplements"),
)
MEDICATIONS: dict[str, Medication] = {name: _med(i, name, etc) for i, (name, etc) in enumerate(_MED_ROWS)}
BACKGROUND_MEDS = (
    "acetaminophen",
    "multivitamin",
    "cholecalciferol (vitamin D3)",
    "docusate sodium",
    "senna",
    "loratadine",
    "calcium carbonate",
    "fish oil",
    "melatonin",
)
# ED treatments dispensed from the Pyxis cabinets.
PYXIS_MEDS = (
    ("Acetaminophen", "004489"),
    ("Ondansetron", "016387"),
    ("Morphine", "004155"),
    ("Ceftriaxone", "009148"),
    ("Heparin", "006549"),
    ("Aspirin", "004380"),
    ("Sodium Chloride 0.9%  Flush", "003776"),
    ("Pantoprazole", "027462"),
    ("Lorazepam", "003753"),
    ("Furosemide", "008208"),
    ("Vancomycin", "009336"),
    ("Ipratropium-Albuterol Neb", "060289"),
)

# Normal and non-specific findings per modality (background records; no condition signal).
NORMAL_ECG = (
    "Sinus rhythm",
    "Normal ECG",
    "Sinus rhythm with premature atrial complexes",
    "Borderline ECG",
    "Sinus bradycardia",
    "Left axis deviation",
    "Nonspecific T wave abnormality",
    "Poor R wave progression",
    "Sinus tachycardia",
    "Otherwise normal ECG",
    "Low QRS voltages in limb leads",
)
NORMAL_RAD = (
    Rad(
        _CXR,
        "The lungs are clear. The cardiomediastinal silhouette is within normal limits. No pleural effusion "
        "or pneumothorax.",
        "No acute cardiopulmonary process.",
    ),
    Rad(
        _CTH,
        "No intracranial hemorrhage, mass effect or territorial infarct. Ventricles and sulci are "
        "age-appropriate.",
        "No acute intracranial abnormality.",
    ),
    Rad(
        _CTAP,
        "The liver, spleen, pancreas and kidneys are unremarkable. No free fluid or free air.",
        "No acute abdominopelvic process.",
    ),
    Rad(
        "CT C-SPINE W/O CONTRAST",
        "Alignment is anatomic. Multilevel degenerative change.",
        "No acute fracture.",
    ),
    Rad(_CXR, "Mild bibasilar atelectasis. No focal consolidation.", "Mild bibasilar atelectasis."),
    Rad(
        "RENAL U.S.",
        "Both kidneys are normal in size without hydronephrosis or stones.",
        "Normal renal ultrasound.",
    ),
)
NORMAL_ECHO = Echo(
    (55, 70),
    "Normal",
    "Normal",
    "Trace MR, trace TR",
    "None",
    "Normal biventricular size and systolic function; no significant valvular disease",
)
