"""The catalogue version's triggers on the labs' tables: what labs make and charge, where and
how they ship, exchange rates and taxes, all kept in memory with the products
(``labs.catalogue``)."""

from products.versioning import catalogue_triggers

TABLES = [
    "labs_lab",
    "labs_labproduct",
    "labs_shippingzone",
    "labs_shippingrate",
    "labs_exchangerate",
    "labs_taxrule",
]
LAB_TRIGGERS = catalogue_triggers(TABLES)
