from django.db import migrations, models

import labs.models


class Migration(migrations.Migration):
    dependencies = [
        ("labs", "0002_simulated_lab_order"),
    ]

    operations = [
        migrations.RenameField(
            model_name="lab", old_name="siteflow_endpoint", new_name="siteflow_base_url"
        ),
        migrations.AlterField(
            model_name="lab",
            name="siteflow_base_url",
            field=models.URLField(
                blank=True,
                help_text="For example https://lab.example.com/api",
                verbose_name="Site Flow base URL",
            ),
        ),
        migrations.AddField(
            model_name="lab",
            name="siteflow_token",
            field=models.CharField(blank=True, max_length=200, verbose_name="Site Flow token"),
        ),
        migrations.AddField(
            model_name="lab",
            name="siteflow_secret",
            field=models.CharField(blank=True, max_length=200, verbose_name="Site Flow secret"),
        ),
        migrations.AddField(
            model_name="lab",
            name="siteflow_destination",
            field=models.CharField(
                blank=True,
                help_text="The destination name.",
                max_length=120,
                verbose_name="Site Flow destination",
            ),
        ),
        migrations.AddField(
            model_name="lab",
            name="siteflow_carrier_aliases",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Shipping method → the site's carrier alias, e.g. "
                '{"Express": "dhl-express"}; a method without an alias is sent under its own name.',
                validators=[labs.models.validate_carrier_aliases],
                verbose_name="Site Flow carrier aliases",
            ),
        ),
        migrations.AddField(
            model_name="labproduct",
            name="lab_sku",
            field=models.CharField(
                blank=True,
                help_text="What the lab calls the product (Site Flow's sku); blank: the product SKU.",
                max_length=100,
                verbose_name="lab's product code",
            ),
        ),
    ]
