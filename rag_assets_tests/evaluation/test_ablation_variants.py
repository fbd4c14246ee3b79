from rag_assets.evaluation.ablation import default_config, reference_of, variants
from rag_assets.retrieve.fusion import PLAIN_RRF, Fusion
from rag_assets.settings import Settings


def test_the_everyday_fields_are_a_component_added_alone_and_removed_from_all_and_the_default():
    default = default_config(Settings())
    assert default["everyday"] is True  # on by default
    chosen = variants(Fusion.parse(default["fusion"]), default)
    assert chosen["rrf"]["use_everyday"] is False  # plain RRF: no component
    assert chosen["+everyday"] == {**chosen["rrf"], "use_everyday": True, "fusion": PLAIN_RRF}
    assert chosen["all"]["use_everyday"] and not chosen["all - everyday"]["use_everyday"]
    assert chosen["default - everyday"] == {**chosen["default"], "use_everyday": False}


def test_a_variant_that_changes_one_component_is_paired_with_the_one_it_changes():
    assert reference_of("all - everyday") == reference_of("all + prf") == "all"
    assert reference_of("default - everyday") == reference_of("default + prf") == "default"
    assert reference_of("+everyday") is None and reference_of("all, plain RRF") is None
