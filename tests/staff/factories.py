import factory
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory


class StaffUserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"staff{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@print.test")
    is_staff = True
    is_active = True
    password = factory.PostGenerationMethodCall("set_password", "a-long-password-1")

    @factory.post_generation
    def saved(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            self.save()
